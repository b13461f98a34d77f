-- The claim keeps its own lanes (issue 16): the claim functions' statement
-- (store/pgstore/sql/Claim.sql) now also moves the lanes of the records it
-- leased, and the UPDATE trigger of the events table does nothing while a
-- claim function runs. The trigger locked each claimed record's lane and
-- recomputed it from the events table: 5.5-5.8 ms of a 15.5-16 ms claim of
-- 100 events (auto_explain), for a result the claim already knows.
--
-- Each function carries SET hubsync.lanes_kept = 'on', a custom setting in
-- force only while the function runs (a SET clause is restored when the
-- function returns, or fails), and hubsync_lane_<queue>_updated returns at
-- once when it is on. Every other UPDATE, the store's and anyone else's, still
-- recomputes its lanes. The statement's kept CTE sets, for each record that
-- leased has a row of, DueDate = GREATEST(DueDate, @lease_expires + 1 us) and
-- leaves HeadId. Why that is the lane migration 018 defines:
--
--   * The head stays. A lease turns pending or expired processing events into
--     processing ones: the record's unfinished events, and so its first one,
--     are the same before and after.
--   * The due date. Afterwards the record's latest lease is @lease_expires:
--     the NOT EXISTS saw no live lease, and an expired one ended before @now,
--     which the lease's expiry follows. If the head is leased (the usual
--     case), DueDate is @lease_expires + 1 us, and the lane's DueDate before,
--     a due date (<= @now) of a claimable head, is smaller. If the UPDATE's
--     re-check dropped the head (a transaction that committed after the
--     statement's snapshot released it with a delay) while it leased
--     followers, the lane is GREATEST(the head's NextAttemptDate, @lease_expires
--     + 1 us), and the head's NextAttemptDate is what that transaction's
--     trigger wrote into the lane: GREATEST of the lane's DueDate gives it.
--   * The lane it starts from is current. The lanes CTE locks each lane with
--     FOR UPDATE; a lane changed by a commit after the snapshot is locked in
--     its newest version, which kept's UPDATE then rewrites (PostgreSQL
--     follows the update chain of a row the statement's snapshot saw and
--     re-checks the LaneKey, which no update changes). Every writer of a
--     record's events changes its lane only under the lane's lock, so no
--     other change to the lane happens between the claim's lock and its
--     commit.
--   * Concurrent writers. An enqueue of the record waits on the lane lock in
--     its insert trigger (ON CONFLICT DO UPDATE), then updates the claim's
--     version; its event comes last in Lane order and changes neither head nor
--     due date. A zombie's Complete or Release of the record (a worker whose
--     lease expired) holds its events' row locks before it waits for the lane:
--     the claim skips those events (locked, SKIP LOCKED) and every later one
--     of the record (ok), and leases nothing of the record if the zombie holds
--     the head. Either way the zombie's trigger, once the claim commits,
--     recomputes the lane from a snapshot that holds the claim's leases and
--     its own change. The claim waits for no lock (every lock it takes is
--     SKIP LOCKED, or already held: its own events and lanes), so this adds
--     no deadlock.
--   * Records that leased nothing (the head's row locked by another writer,
--     or dropped by the re-check with no follower leased) keep their lane
--     untouched, as the trigger would have found it.
--
-- kept reads the lanes by LaneKey = ANY (array of the leased records' keys):
-- one primary-key probe per record, whatever the statistics (on the record's
-- columns the planner mis-plans without them, migration 018). The function's
-- SET clauses keep it an index scan (TestLaneTriggersProbeWithoutStatistics,
-- TestClaimKeepsItsLanes).
--
-- The rest is migration 019's functions, with Claim.sql's new body
-- (TestClaimFunctionsMatchClaimSQL); ClaimIDs, off the hot path, still leaves
-- its lanes to the trigger. The trigger functions are migration 018's with
-- the early return.

CREATE OR REPLACE FUNCTION hubsync_claim_inbound(p_key text, p_now timestamptz, p_limit integer, p_max_per_record integer, p_owner text, p_lease_expires timestamptz)
    RETURNS SETOF _System_IntegrationInbound LANGUAGE plpgsql VOLATILE
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
    SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
    SET plan_cache_mode = force_generic_plan SET hubsync.lanes_kept = 'on'
AS $$
BEGIN
RETURN QUERY
WITH lanes AS MATERIALIZED (
    SELECT n.Source, n.ObjectType, n.ExternalID FROM hubsync_lane_inbound n
    WHERE n.Source = $1 AND n.DueDate <= $2
    ORDER BY n.Source, n.DueDate, n.HeadId
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), evs AS MATERIALIZED (
    SELECT s.Id, s.pos, l.Source, l.ObjectType, l.ExternalID FROM lanes l
    CROSS JOIN LATERAL (
        SELECT f.Id, ROW_NUMBER() OVER (ORDER BY f.Lane) AS pos,
            SUM(CASE WHEN (f.Status = 'pending' AND f.NextAttemptDate <= $2)
                       OR (f.Status = 'processing' AND f.LeaseExpiresDate < $2)
                     THEN 0 ELSE 1 END) OVER (ORDER BY f.Lane) AS blocked
        FROM _System_IntegrationInbound f
        WHERE f.Source = l.Source AND f.ObjectType = l.ObjectType AND f.ExternalID = l.ExternalID AND f.Status IN ('pending', 'processing')
        ORDER BY f.Lane LIMIT $4
    ) s
    WHERE s.blocked = 0
      AND NOT EXISTS (
        SELECT 1 FROM _System_IntegrationInbound x
        WHERE x.Source = l.Source AND x.ObjectType = l.ObjectType AND x.ExternalID = l.ExternalID AND x.LeaseExpiresDate >= $2 OFFSET 0)
), locked AS MATERIALIZED (
    SELECT v.* FROM evs v JOIN _System_IntegrationInbound e ON e.Id = v.Id
    FOR UPDATE OF e SKIP LOCKED
), ok AS MATERIALIZED (
    SELECT z.Id FROM (
        SELECT k.Id, k.pos, ROW_NUMBER() OVER (PARTITION BY k.Source, k.ObjectType, k.ExternalID ORDER BY k.pos) AS n
        FROM locked k) z
    WHERE z.pos = z.n
), leased AS (
    UPDATE _System_IntegrationInbound AS t
    SET Status = 'processing', LeaseOwner = $5, LeaseExpiresDate = $6,
    Attempt = t.Attempt + 1, LastModifiedDate = $2
    FROM ok AS c
    WHERE t.Id = c.Id AND ((t.Status = 'pending' AND t.NextAttemptDate <= $2)
      OR (t.Status = 'processing' AND t.LeaseExpiresDate < $2))
    RETURNING t.*
), kept AS (
    UPDATE hubsync_lane_inbound AS n
    SET DueDate = GREATEST(n.DueDate, $6 + interval '1 microsecond')
    WHERE n.LaneKey = ANY (ARRAY(SELECT (length(r.Source)::text || ':' || length(r.ObjectType)::text || ':' || r.Source || r.ObjectType || r.ExternalID) FROM leased r))
)
SELECT r.* FROM leased r;
END
$$;

CREATE OR REPLACE FUNCTION hubsync_claim_outbound(p_key text, p_now timestamptz, p_limit integer, p_max_per_record integer, p_owner text, p_lease_expires timestamptz)
    RETURNS SETOF _System_IntegrationOutbound LANGUAGE plpgsql VOLATILE
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
    SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
    SET plan_cache_mode = force_generic_plan SET hubsync.lanes_kept = 'on'
AS $$
BEGIN
RETURN QUERY
WITH lanes AS MATERIALIZED (
    SELECT n.Destination, n.ObjectType, n.RecordID FROM hubsync_lane_outbound n
    WHERE n.Destination = $1 AND n.DueDate <= $2
    ORDER BY n.Destination, n.DueDate, n.HeadId
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), evs AS MATERIALIZED (
    SELECT s.Id, s.pos, l.Destination, l.ObjectType, l.RecordID FROM lanes l
    CROSS JOIN LATERAL (
        SELECT f.Id, ROW_NUMBER() OVER (ORDER BY f.Lane) AS pos,
            SUM(CASE WHEN (f.Status = 'pending' AND f.NextAttemptDate <= $2)
                       OR (f.Status = 'processing' AND f.LeaseExpiresDate < $2)
                     THEN 0 ELSE 1 END) OVER (ORDER BY f.Lane) AS blocked
        FROM _System_IntegrationOutbound f
        WHERE f.Destination = l.Destination AND f.ObjectType = l.ObjectType AND f.RecordID = l.RecordID AND f.Status IN ('pending', 'processing')
        ORDER BY f.Lane LIMIT $4
    ) s
    WHERE s.blocked = 0
      AND NOT EXISTS (
        SELECT 1 FROM _System_IntegrationOutbound x
        WHERE x.Destination = l.Destination AND x.ObjectType = l.ObjectType AND x.RecordID = l.RecordID AND x.LeaseExpiresDate >= $2 OFFSET 0)
), locked AS MATERIALIZED (
    SELECT v.* FROM evs v JOIN _System_IntegrationOutbound e ON e.Id = v.Id
    FOR UPDATE OF e SKIP LOCKED
), ok AS MATERIALIZED (
    SELECT z.Id FROM (
        SELECT k.Id, k.pos, ROW_NUMBER() OVER (PARTITION BY k.Destination, k.ObjectType, k.RecordID ORDER BY k.pos) AS n
        FROM locked k) z
    WHERE z.pos = z.n
), leased AS (
    UPDATE _System_IntegrationOutbound AS t
    SET Status = 'processing', LeaseOwner = $5, LeaseExpiresDate = $6,
    Attempt = t.Attempt + 1, LastModifiedDate = $2
    FROM ok AS c
    WHERE t.Id = c.Id AND ((t.Status = 'pending' AND t.NextAttemptDate <= $2)
      OR (t.Status = 'processing' AND t.LeaseExpiresDate < $2))
    RETURNING t.*
), kept AS (
    UPDATE hubsync_lane_outbound AS n
    SET DueDate = GREATEST(n.DueDate, $6 + interval '1 microsecond')
    WHERE n.LaneKey = ANY (ARRAY(SELECT (length(r.Destination)::text || ':' || length(r.ObjectType)::text || ':' || r.Destination || r.ObjectType || r.RecordID) FROM leased r))
)
SELECT r.* FROM leased r;
END
$$;

CREATE OR REPLACE FUNCTION hubsync_claim_internal(p_now timestamptz, p_limit integer, p_max_per_record integer, p_owner text, p_lease_expires timestamptz)
    RETURNS SETOF _System_OutboxEvent LANGUAGE plpgsql VOLATILE
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
    SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
    SET plan_cache_mode = force_generic_plan SET hubsync.lanes_kept = 'on'
AS $$
BEGIN
RETURN QUERY
WITH lanes AS MATERIALIZED (
    SELECT n.ObjectType, n.RecordID FROM hubsync_lane_internal n
    WHERE n.DueDate <= $1
    ORDER BY n.DueDate, n.HeadId
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), evs AS MATERIALIZED (
    SELECT s.Id, s.pos, l.ObjectType, l.RecordID FROM lanes l
    CROSS JOIN LATERAL (
        SELECT f.Id, ROW_NUMBER() OVER (ORDER BY f.Lane) AS pos,
            SUM(CASE WHEN (f.Status = 'pending' AND f.NextAttemptDate <= $1)
                       OR (f.Status = 'processing' AND f.LeaseExpiresDate < $1)
                     THEN 0 ELSE 1 END) OVER (ORDER BY f.Lane) AS blocked
        FROM _System_OutboxEvent f
        WHERE f.ObjectType = l.ObjectType AND f.RecordID = l.RecordID AND f.Status IN ('pending', 'processing')
        ORDER BY f.Lane LIMIT $3
    ) s
    WHERE s.blocked = 0
      AND NOT EXISTS (
        SELECT 1 FROM _System_OutboxEvent x
        WHERE x.ObjectType = l.ObjectType AND x.RecordID = l.RecordID AND x.LeaseExpiresDate >= $1 OFFSET 0)
), locked AS MATERIALIZED (
    SELECT v.* FROM evs v JOIN _System_OutboxEvent e ON e.Id = v.Id
    FOR UPDATE OF e SKIP LOCKED
), ok AS MATERIALIZED (
    SELECT z.Id FROM (
        SELECT k.Id, k.pos, ROW_NUMBER() OVER (PARTITION BY k.ObjectType, k.RecordID ORDER BY k.pos) AS n
        FROM locked k) z
    WHERE z.pos = z.n
), leased AS (
    UPDATE _System_OutboxEvent AS t
    SET Status = 'processing', LeaseOwner = $4, LeaseExpiresDate = $5,
    Attempt = t.Attempt + 1, LastModifiedDate = $1
    FROM ok AS c
    WHERE t.Id = c.Id AND ((t.Status = 'pending' AND t.NextAttemptDate <= $1)
      OR (t.Status = 'processing' AND t.LeaseExpiresDate < $1))
    RETURNING t.*
), kept AS (
    UPDATE hubsync_lane_internal AS n
    SET DueDate = GREATEST(n.DueDate, $5 + interval '1 microsecond')
    WHERE n.LaneKey = ANY (ARRAY(SELECT (length(r.ObjectType)::text || ':' || r.ObjectType || r.RecordID) FROM leased r))
)
SELECT r.* FROM leased r;
END
$$;

CREATE OR REPLACE FUNCTION hubsync_lane_inbound_updated() RETURNS trigger LANGUAGE plpgsql
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $$
BEGIN
    -- A claim function keeps the lanes of its own UPDATE (migration 021).
    IF current_setting('hubsync.lanes_kept', true) = 'on' THEN
        RETURN NULL;
    END IF;
    PERFORM 1 FROM (
        WITH r AS MATERIALIZED (SELECT DISTINCT Source, ObjectType, ExternalID FROM new_rows ORDER BY Source, ObjectType, ExternalID)
        SELECT 1 FROM r CROSS JOIN LATERAL (
            SELECT 1 FROM hubsync_lane_inbound l WHERE l.LaneKey = (length(r.Source)::text || ':' || length(r.ObjectType)::text || ':' || r.Source || r.ObjectType || r.ExternalID) FOR UPDATE OF l) x) locks;
    WITH r AS (
        SELECT DISTINCT Source, ObjectType, ExternalID FROM new_rows
    ), c AS (
        SELECT r.Source, r.ObjectType, r.ExternalID, h.Id AS head_id,
            COALESCE(GREATEST(CASE WHEN h.Status = 'pending' THEN h.NextAttemptDate END,
                              lz.until + interval '1 microsecond'), h.NextAttemptDate) AS due
        FROM r
        LEFT JOIN LATERAL (
            SELECT x.Id, x.Status, x.NextAttemptDate FROM _System_IntegrationInbound x
            WHERE x.Source = r.Source AND x.ObjectType = r.ObjectType AND x.ExternalID = r.ExternalID AND x.Status IN ('pending', 'processing')
            ORDER BY x.Lane LIMIT 1) h ON true
        LEFT JOIN LATERAL (
            SELECT MAX(x.LeaseExpiresDate) AS until FROM _System_IntegrationInbound x
            WHERE x.Source = r.Source AND x.ObjectType = r.ObjectType AND x.ExternalID = r.ExternalID AND x.LeaseExpiresDate IS NOT NULL) lz ON true
    ), gone AS (
        DELETE FROM hubsync_lane_inbound WHERE ctid = ANY (ARRAY(
            SELECT x.ctid FROM c CROSS JOIN LATERAL (
                SELECT l.ctid FROM hubsync_lane_inbound l WHERE l.LaneKey = (length(c.Source)::text || ':' || length(c.ObjectType)::text || ':' || c.Source || c.ObjectType || c.ExternalID)) x
            WHERE c.head_id IS NULL))
    )
    INSERT INTO hubsync_lane_inbound AS l (Source, ObjectType, ExternalID, DueDate, HeadId)
    SELECT Source, ObjectType, ExternalID, due, head_id FROM c WHERE head_id IS NOT NULL
    ON CONFLICT (LaneKey) DO UPDATE SET DueDate = EXCLUDED.DueDate, HeadId = EXCLUDED.HeadId
    WHERE (l.DueDate, l.HeadId) IS DISTINCT FROM (EXCLUDED.DueDate, EXCLUDED.HeadId);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION hubsync_lane_outbound_updated() RETURNS trigger LANGUAGE plpgsql
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $$
BEGIN
    -- A claim function keeps the lanes of its own UPDATE (migration 021).
    IF current_setting('hubsync.lanes_kept', true) = 'on' THEN
        RETURN NULL;
    END IF;
    PERFORM 1 FROM (
        WITH r AS MATERIALIZED (SELECT DISTINCT Destination, ObjectType, RecordID FROM new_rows ORDER BY Destination, ObjectType, RecordID)
        SELECT 1 FROM r CROSS JOIN LATERAL (
            SELECT 1 FROM hubsync_lane_outbound l WHERE l.LaneKey = (length(r.Destination)::text || ':' || length(r.ObjectType)::text || ':' || r.Destination || r.ObjectType || r.RecordID) FOR UPDATE OF l) x) locks;
    WITH r AS (
        SELECT DISTINCT Destination, ObjectType, RecordID FROM new_rows
    ), c AS (
        SELECT r.Destination, r.ObjectType, r.RecordID, h.Id AS head_id,
            COALESCE(GREATEST(CASE WHEN h.Status = 'pending' THEN h.NextAttemptDate END,
                              lz.until + interval '1 microsecond'), h.NextAttemptDate) AS due
        FROM r
        LEFT JOIN LATERAL (
            SELECT x.Id, x.Status, x.NextAttemptDate FROM _System_IntegrationOutbound x
            WHERE x.Destination = r.Destination AND x.ObjectType = r.ObjectType AND x.RecordID = r.RecordID AND x.Status IN ('pending', 'processing')
            ORDER BY x.Lane LIMIT 1) h ON true
        LEFT JOIN LATERAL (
            SELECT MAX(x.LeaseExpiresDate) AS until FROM _System_IntegrationOutbound x
            WHERE x.Destination = r.Destination AND x.ObjectType = r.ObjectType AND x.RecordID = r.RecordID AND x.LeaseExpiresDate IS NOT NULL) lz ON true
    ), gone AS (
        DELETE FROM hubsync_lane_outbound WHERE ctid = ANY (ARRAY(
            SELECT x.ctid FROM c CROSS JOIN LATERAL (
                SELECT l.ctid FROM hubsync_lane_outbound l WHERE l.LaneKey = (length(c.Destination)::text || ':' || length(c.ObjectType)::text || ':' || c.Destination || c.ObjectType || c.RecordID)) x
            WHERE c.head_id IS NULL))
    )
    INSERT INTO hubsync_lane_outbound AS l (Destination, ObjectType, RecordID, DueDate, HeadId)
    SELECT Destination, ObjectType, RecordID, due, head_id FROM c WHERE head_id IS NOT NULL
    ON CONFLICT (LaneKey) DO UPDATE SET DueDate = EXCLUDED.DueDate, HeadId = EXCLUDED.HeadId
    WHERE (l.DueDate, l.HeadId) IS DISTINCT FROM (EXCLUDED.DueDate, EXCLUDED.HeadId);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION hubsync_lane_internal_updated() RETURNS trigger LANGUAGE plpgsql
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $$
BEGIN
    -- A claim function keeps the lanes of its own UPDATE (migration 021).
    IF current_setting('hubsync.lanes_kept', true) = 'on' THEN
        RETURN NULL;
    END IF;
    PERFORM 1 FROM (
        WITH r AS MATERIALIZED (SELECT DISTINCT ObjectType, RecordID FROM new_rows ORDER BY ObjectType, RecordID)
        SELECT 1 FROM r CROSS JOIN LATERAL (
            SELECT 1 FROM hubsync_lane_internal l WHERE l.LaneKey = (length(r.ObjectType)::text || ':' || r.ObjectType || r.RecordID) FOR UPDATE OF l) x) locks;
    WITH r AS (
        SELECT DISTINCT ObjectType, RecordID FROM new_rows
    ), c AS (
        SELECT r.ObjectType, r.RecordID, h.Id AS head_id,
            COALESCE(GREATEST(CASE WHEN h.Status = 'pending' THEN h.NextAttemptDate END,
                              lz.until + interval '1 microsecond'), h.NextAttemptDate) AS due
        FROM r
        LEFT JOIN LATERAL (
            SELECT x.Id, x.Status, x.NextAttemptDate FROM _System_OutboxEvent x
            WHERE x.ObjectType = r.ObjectType AND x.RecordID = r.RecordID AND x.Status IN ('pending', 'processing')
            ORDER BY x.Lane LIMIT 1) h ON true
        LEFT JOIN LATERAL (
            SELECT MAX(x.LeaseExpiresDate) AS until FROM _System_OutboxEvent x
            WHERE x.ObjectType = r.ObjectType AND x.RecordID = r.RecordID AND x.LeaseExpiresDate IS NOT NULL) lz ON true
    ), gone AS (
        DELETE FROM hubsync_lane_internal WHERE ctid = ANY (ARRAY(
            SELECT x.ctid FROM c CROSS JOIN LATERAL (
                SELECT l.ctid FROM hubsync_lane_internal l WHERE l.LaneKey = (length(c.ObjectType)::text || ':' || c.ObjectType || c.RecordID)) x
            WHERE c.head_id IS NULL))
    )
    INSERT INTO hubsync_lane_internal AS l (ObjectType, RecordID, DueDate, HeadId)
    SELECT ObjectType, RecordID, due, head_id FROM c WHERE head_id IS NOT NULL
    ON CONFLICT (LaneKey) DO UPDATE SET DueDate = EXCLUDED.DueDate, HeadId = EXCLUDED.HeadId
    WHERE (l.DueDate, l.HeadId) IS DISTINCT FROM (EXCLUDED.DueDate, EXCLUDED.HeadId);
    RETURN NULL;
END $$;
