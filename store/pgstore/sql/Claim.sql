-- The body of the claim function hubsync_claim_<queue> (migration 024), which
-- the engine calls (ClaimCall.sql): this file is the statement's one source,
-- and TestClaimFunctionsMatchClaimSQL requires each migrated function body to
-- be RETURN QUERY of it, rendered for its queue, without these comments; a
-- change here needs a migration that replaces the functions. The function's
-- SET clauses hold the planner settings the statement needs, and its
-- parameters are this statement's, in the order of their first use ($1, $2,
-- … in the body).
--
-- A claim reads its record lanes (hubsync_lane_<queue>, migration 018), not
-- the backlog, and takes recovered work first (migrations 023, 024):
-- recovered takes up to @limit due lanes of the key whose record was claimed
-- before (Claimed: it holds a lease, here an expired one, or its head was
-- leased before and went back to pending: released with a delay, in retry
-- backoff, requeued), oldest due date first, from idx_lane_<queue>_claimed;
-- free takes the remaining places, @limit minus what recovered took, from the
-- other due lanes (heads never claimed) in (DueDate, HeadId) order, from
-- idx_lane_<queue>_free; both skip lanes another claimer holds, and lanes is
-- the two together. So a record whose worker died goes out as its lease
-- expires, and a released or retried one as its delay ends, not behind every
-- record queued before that (SQLite and MariaDB take it in creation order,
-- which also puts it before the records queued after it). evs walks each
-- taken record's unfinished events in Lane order on its open index, up to
-- @max_per_record, while they are claimable (the first that is not stops the
-- record: backoff, or a live lease); leased leases them; and kept moves the lanes of the records it
-- leased to one microsecond after the new lease's expiry, Leased and Claimed,
-- their head unchanged. Every step is an index range with a LIMIT or an index
-- probe, so the cost follows what the claim returns, whatever the backlog and
-- whatever the planner's statistics say (plan tests in stale_stats_test.go).
--
-- The statement keeps its own lanes: the function's SET hubsync.lanes_kept
-- makes the UPDATE trigger of the events table return at once, which would
-- otherwise lock and recompute the same lanes from the events table (a third
-- of the claim's time). Migration 021 says why kept's lanes are exact under
-- concurrent writers. kept finds the lanes by LaneKey, one probe of its
-- primary key per record (see migration 018 on why not the record's columns).
--
-- The lane row lock arbitrates between claimers: one record, one claimer. A
-- lane changed by a commit after this statement's snapshot is re-checked by
-- PostgreSQL (DueDate <= @now, and Claimed as its branch wants it) on its
-- newest version before it is locked, so a head delayed since the snapshot
-- drops its record, and so does a lane that moved from one due index to the
-- other (the next claim takes it). locked takes the
-- events' row locks without waiting and re-checks each locked event in its
-- newest version (claimable, or finished meanwhile), and ok keeps each
-- record's events up to the first one another transaction holds (a Complete,
-- Release or ClaimIDs of the same record in flight) or that is no longer
-- claimable (a follower delayed since the snapshot, which leaves the lane as
-- it was: migration 022); the UPDATE re-checks each event (claimable) and
-- drops the finished ones. So a stale read at worst leaves a record, or its
-- tail, for the next claim; it never hands an event out twice or out of
-- order (TestClaimZombieRace forces these interleavings). A claim never
-- waits for a row lock while it holds lanes, so it cannot deadlock with a
-- writer that holds an event and waits for its lane (the lane triggers).
-- The lease probe keeps a record whose later event is leased
-- (a pending head released behind a still-leased follower) for its holder.
--
-- It returns whole rows (leased): the function returns SETOF the queue's
-- table, and ClaimCall.sql selects the engine's columns from them by name.
WITH recovered AS MATERIALIZED (
    SELECT {{tuple . "n"}} FROM hubsync_lane_{{.Dir}} n
    WHERE {{if .Key}}n.{{.Key}} = @key AND {{end}}n.Claimed AND n.DueDate <= @now
    ORDER BY {{if .Key}}n.{{.Key}}, {{end}}n.DueDate, n.HeadId
    LIMIT @limit
    FOR UPDATE SKIP LOCKED
), free AS MATERIALIZED (
    SELECT {{tuple . "n"}} FROM hubsync_lane_{{.Dir}} n
    WHERE {{if .Key}}n.{{.Key}} = @key AND {{end}}NOT n.Claimed AND n.DueDate <= @now
    ORDER BY {{if .Key}}n.{{.Key}}, {{end}}n.DueDate, n.HeadId
    LIMIT @limit - (SELECT COUNT(*) FROM recovered)
    FOR UPDATE SKIP LOCKED
), lanes AS (
    SELECT * FROM recovered UNION ALL SELECT * FROM free
), evs AS MATERIALIZED (
    SELECT s.Id, s.pos, {{tuple . "l"}} FROM lanes l
    CROSS JOIN LATERAL (
        {{template "walk"}}
        FROM {{.Table}} f
        WHERE {{same . "f" "l"}} AND f.Status IN ('pending', 'processing')
        ORDER BY f.Lane LIMIT @max_per_record
    ) s
    WHERE s.blocked = 0
      AND NOT EXISTS (
        SELECT 1 FROM {{.Table}} x
        WHERE {{same . "x" "l"}} AND x.LeaseExpiresDate >= @now OFFSET 0)
), {{template "lockprefix" .}}, leased AS (
    UPDATE {{.Table}} AS t
    {{template "leaseset"}}
    FROM ok AS c
    WHERE t.Id = c.Id AND {{template "claimable"}}
    RETURNING t.*
), kept AS (
    UPDATE hubsync_lane_{{.Dir}} AS n
    SET DueDate = GREATEST(n.DueDate, @lease_expires + interval '1 microsecond'), Leased = true, Claimed = true
    WHERE n.LaneKey = ANY (ARRAY(SELECT {{lanekey . "r"}} FROM leased r))
)
SELECT r.* FROM leased r
