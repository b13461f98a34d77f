-- Template definitions of the PostgreSQL backend's queries. Each sql/NAME.sql
-- beside this file overrides, or adds to, the shared internal/sqlq/sql/NAME.sql;
-- internal/sqlq renders every query once per queue with text/template
-- ({{.Table}}, {{.Key}}, the record-key columns) and binds its @named
-- parameters with internal/dialectsql.
-- Lists of ids and leases arrive as one JSON array parameter.
--
-- A claim is one statement (Claim.sql) over the record lanes of migration 018,
-- the body of the queue's claim function (migrations 021 to 024), which the
-- engine calls with ClaimCall.sql; the function carries the statement's
-- planner settings, and the statement keeps the lanes of the records it
-- leases. It takes the due lanes of records claimed before first (an expired
-- lease, or a head released, retried or requeued), then the other due lanes,
-- each in (DueDate, HeadId) order (migrations 023, 024); Pending lists the
-- same heads.
-- ClaimIDs tests each named event with the template "head".

{{/* A candidate e is the head of its record: the record's earliest unfinished
     event, and no other event of the record holds a live lease. So a record is
     out to at most one claim at a time (its head, with the followers that
     claim takes), in Lane order (the database-assigned sequence); failed and processed
     events do not block. Concurrent claimers cannot both take events of one
     record: a later event is not its record's first unfinished one in any
     snapshot, and the head itself is arbitrated by its row lock (a claimer that
     finds it claimed after the lock re-evaluates the row and drops it).

     Both checks are one index probe each, whatever the record's backlog: the
     first entry of the record's unfinished events (idx_*_open, in Lane
     order, migration 012), and the record's live leases (idx_*_lease, migrations 008, 009). The
     NOT EXISTS over earlier events that this replaced was planned on the
     record's whole history (idx_outbound_record) and cost each candidate time
     in proportion to its record's past and present events.

     The lease probe must stay a per-candidate probe of idx_*_lease on the whole
     record key. Only processing events have a LeaseExpiresDate (every other
     status change clears it), so it tests that alone: idx_*_lease (009) is
     partial on LeaseExpiresDate IS NOT NULL, and the expiry index of 006
     (Status = 'processing', without the record's columns) cannot serve it. With
     the Status test, on statistics taken while nothing was processing (a fresh
     backlog) the planner took that expiry index and read every live lease of the
     key for each candidate: with 4 concurrent claimers, 7,000 of a claim's
     10,000 buffers. OFFSET 0 keeps the NOT EXISTS a correlated subplan: as an
     anti join the planner would scan the live leases once and compare each
     candidate with all of them. */}}
{{define "head"}}e.Id = (
        SELECT x.Id FROM {{.Table}} x
        WHERE {{same . "x" "e"}} AND x.Status IN ('pending', 'processing')
        ORDER BY x.Lane LIMIT 1)
      AND NOT EXISTS (
        SELECT 1 FROM {{.Table}} x
        WHERE {{same . "x" "e"}} AND x.LeaseExpiresDate >= @now OFFSET 0)
{{end}}

{{/* walk is the window over one record's unfinished events f, in Lane order,
     that Claim and ClaimIDs read: each event's position and how many events
     up to it are not claimable (in backoff, or leased), so that blocked = 0
     keeps the record's prefix of due events. */}}
{{define "walk"}}SELECT f.Id, ROW_NUMBER() OVER (ORDER BY f.Lane) AS pos,
            SUM(CASE WHEN (f.Status = 'pending' AND f.NextAttemptDate <= @now)
                       OR (f.Status = 'processing' AND f.LeaseExpiresDate < @now)
                     THEN 0 ELSE 1 END) OVER (ORDER BY f.Lane) AS blocked{{end}}

{{/* lockprefix follows a CTE evs(Id, pos, record key) of the events a claim
     would lease: locked takes their row locks without waiting, and ok keeps
     each record's events up to the first one another transaction holds, or
     that is unfinished but no longer claimable, so a record's events are
     never handed out with a gap and a claim never waits for a row lock.

     locked re-checks the row it locked: evs read the events in the
     statement's snapshot, and an event that a commit after the snapshot
     changed is locked in its newest version, which PostgreSQL re-checks
     against locked's WHERE (READ COMMITTED). A worker whose lease expired
     may release one of its events with a delay (or put it in backoff) after
     the claim's snapshot; when that event is not its record's head the lane
     does not change, and the UPDATE's re-check alone would drop that event
     but lease the ones behind it, out of order (TestClaimZombieRace). Here
     the event leaves locked, and ok stops its record at the gap. An event
     finished meanwhile (processed, failed) blocks nothing: it stays in
     locked, and the UPDATE's re-check drops it. */}}
{{define "lockprefix"}}locked AS MATERIALIZED (
    SELECT v.* FROM evs v JOIN {{.Table}} t ON t.Id = v.Id
    WHERE {{template "claimable"}} OR t.Status NOT IN ('pending', 'processing')
    FOR UPDATE OF t SKIP LOCKED
), ok AS MATERIALIZED (
    SELECT z.Id FROM (
        SELECT k.Id, k.pos, ROW_NUMBER() OVER (PARTITION BY {{tuple . "k"}} ORDER BY k.pos) AS n
        FROM locked k) z
    WHERE z.pos = z.n
){{end}}

{{/* A row that the claim may lease: due pending, or processing with an expired
     lease. The UPDATE repeats it so that a row changed by a concurrent commit
     after the claim's snapshot (PostgreSQL re-checks the new version) is not
     leased: this is what keeps a follower from being handed out twice. */}}
{{define "claimable"}}((t.Status = 'pending' AND t.NextAttemptDate <= @now)
      OR (t.Status = 'processing' AND t.LeaseExpiresDate < @now)){{end}}

{{/* leaseset is the SET of a claim's UPDATE: Attempt+1 is the new fence. */}}
{{define "leaseset"}}SET Status = 'processing', LeaseOwner = @owner, LeaseExpiresDate = @lease_expires,
    Attempt = t.Attempt + 1, LastModifiedDate = @now{{end}}

{{define "leases"}}jsonb_to_recordset(@leases::jsonb) AS l(id text, attempt int){{end}}

{{/* seqrecords selects NextSeqBatch's @records in their ord order. */}}
{{define "seqrecords"}}SELECT @queue, r.record_key, r.object_type, r.record_id, r.n
FROM jsonb_to_recordset(@records::jsonb) AS r(ord int, record_key text, object_type text, record_id text, n bigint)
ORDER BY r.ord{{end}}
