-- The claim takes recovered work first. A record's lane is due, while the
-- record holds a lease, one microsecond after the lease's expiry (migration
-- 018), and the claim took due lanes in (DueDate, HeadId) order: when a
-- replica died, its records became claimable at their leases' expiry (15 s in
-- hubsync serve) but sorted behind every record enqueued before that expiry,
-- so with a backlog X seconds deep, kill -> processed took the lease + X
-- (outbound p99 36.8 s). SQLite and MariaDB order their candidates (due
-- pending heads and processing ones with an expired lease) by CreatedDate, so
-- there a recovered record comes before the records queued while it was out.
--
-- Each lane now says whether its record holds a lease: Leased is true iff one
-- of the record's events has a LeaseExpiresDate (only processing events have
-- one, live or expired). A due lane (DueDate <= now) that is Leased is a
-- record whose lease expired. idx_lane_<queue>_due is replaced by two
-- partial indexes on the same columns, idx_lane_<queue>_leased (WHERE Leased)
-- and idx_lane_<queue>_free (WHERE NOT Leased). The claim (store/pgstore/sql/
-- Claim.sql) takes up to @limit due lanes from the leased index, oldest expiry
-- first, in its CTE recovered; then free takes the remaining places, @limit
-- minus what recovered took, from the free index in (DueDate, HeadId) order.
-- Each is an index range in order with its LIMIT under FOR UPDATE SKIP LOCKED,
-- so the claim locks at most @limit lanes and reads in proportion to what it
-- returns, whatever the statistics (stale_stats_test.go,
-- TestRecoveredClaimWithoutStatistics). Pending.sql lists the same heads.
--
-- The lane lock's re-check (migration 022) covers Leased too: a scan under
-- FOR UPDATE keeps its partial index's predicate as a filter, so PostgreSQL
-- re-checks Leased with DueDate on a lane's newest version. A lane that left
-- the leased index after the claim's snapshot (a zombie released or finished
-- its record, and the new head is due) is dropped from recovered, and free's
-- snapshot does not see its new entry: the record waits for the next claim,
-- as a stale read may make any record do (Claim.sql).
--
-- Who keeps Leased: the claim's kept CTE sets it (the records it leased hold
-- a lease now); the insert trigger sets it for a new lane from its head, as
-- the due date (Status = 'processing'); the update and delete triggers
-- recompute it from the lease probe they already make (lz.until IS NOT NULL).
-- The trigger functions are migrations 018's and 021's otherwise, the
-- update trigger's early return under hubsync.lanes_kept and the functions'
-- SET clauses included. TestLanesFollowEveryChange and
-- TestLanesUnderConcurrentWriters compare Leased with the events as they do
-- DueDate and HeadId.
--
-- Dead index entries. A lane that was leased and then finished, released or
-- given a longer lease (the heartbeat) leaves a dead entry in the leased
-- index at its old expiry + 1 us, which is in the range recovered walks from
-- its start (DueDate <= now) as soon as that lease would have expired;
-- recovered walks that whole range whenever fewer than @limit leases expired,
-- which is most claims. It is bounded: an index scan that meets an entry
-- whose row version is dead to every transaction marks it killed, and later
-- scans skip it without visiting the table, so each dead entry costs one
-- table visit once and then its place on a leaf page; vacuum removes them,
-- and the lanes tables keep migration 018's autovacuum settings (vacuumed
-- after 1,000 + 1 % dead rows). So recovered walks the killed entries of the
-- leases that ended since the last vacuum: a few leaf pages at the vacuum
-- threshold. Measured without any vacuum, 5,000 dead entries (50 claims and
-- completes of 100 records, a minute before): the claim that first met them
-- read 457 buffers in recovered, each claim after it 32, of some 2,700 for a
-- claim of 100 events. The free index has the pattern the old due index had:
-- its dead entries are the lanes claimed since the last vacuum, at the due
-- dates the claim walks first.
--
-- The existing lanes of records with a lease are marked below, after the
-- trigger functions are replaced (ALTER TABLE holds the lanes table until
-- commit). A write whose trigger (or a claim that) waits for the lanes table
-- while this migration holds it runs its old body afterwards and leaves its
-- lane's Leased as it was, false for a new lane, until the record's next
-- change: the flag orders the claim only, whose every event is re-checked, so
-- such a record is at worst claimed in the old order once
-- (TestMigrationMarksLeasedLanes checks the marks).
--
-- The claim functions are migration 022's with Claim.sql's new body
-- (TestClaimFunctionsMatchClaimSQL); their parameters and SET clauses are
-- unchanged.

-- inbound
ALTER TABLE hubsync_lane_inbound ADD COLUMN Leased boolean NOT NULL DEFAULT false;

CREATE OR REPLACE FUNCTION hubsync_lane_inbound_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A new event never precedes its record's head; only a record without a
    -- lane gets one. The no-op update of an existing lane locks it, so a
    -- transaction that is recomputing it (and might delete it) waits for this
    -- one and then sees the new event.
    INSERT INTO hubsync_lane_inbound AS l (Source, ObjectType, ExternalID, DueDate, HeadId, Leased)
    SELECT DISTINCT ON (Source, ObjectType, ExternalID) Source, ObjectType, ExternalID,
        CASE WHEN Status = 'processing' THEN LeaseExpiresDate + interval '1 microsecond' ELSE NextAttemptDate END, Id,
        Status = 'processing'
    FROM new_rows WHERE Status IN ('pending', 'processing')
    ORDER BY Source, ObjectType, ExternalID, Lane
    ON CONFLICT (LaneKey) DO UPDATE SET HeadId = l.HeadId;
    RETURN NULL;
END $$;

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
                              lz.until + interval '1 microsecond'), h.NextAttemptDate) AS due,
            lz.until IS NOT NULL AS leased
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
    INSERT INTO hubsync_lane_inbound AS l (Source, ObjectType, ExternalID, DueDate, HeadId, Leased)
    SELECT Source, ObjectType, ExternalID, due, head_id, leased FROM c WHERE head_id IS NOT NULL
    ON CONFLICT (LaneKey) DO UPDATE SET DueDate = EXCLUDED.DueDate, HeadId = EXCLUDED.HeadId, Leased = EXCLUDED.Leased
    WHERE (l.DueDate, l.HeadId, l.Leased) IS DISTINCT FROM (EXCLUDED.DueDate, EXCLUDED.HeadId, EXCLUDED.Leased);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION hubsync_lane_inbound_deleted() RETURNS trigger LANGUAGE plpgsql
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $$
BEGIN
    PERFORM 1 FROM (
        WITH r AS MATERIALIZED (SELECT DISTINCT Source, ObjectType, ExternalID FROM old_rows WHERE Status IN ('pending', 'processing') ORDER BY Source, ObjectType, ExternalID)
        SELECT 1 FROM r CROSS JOIN LATERAL (
            SELECT 1 FROM hubsync_lane_inbound l WHERE l.LaneKey = (length(r.Source)::text || ':' || length(r.ObjectType)::text || ':' || r.Source || r.ObjectType || r.ExternalID) FOR UPDATE OF l) x) locks;
    WITH r AS (
        SELECT DISTINCT Source, ObjectType, ExternalID FROM old_rows WHERE Status IN ('pending', 'processing')
    ), c AS (
        SELECT r.Source, r.ObjectType, r.ExternalID, h.Id AS head_id,
            COALESCE(GREATEST(CASE WHEN h.Status = 'pending' THEN h.NextAttemptDate END,
                              lz.until + interval '1 microsecond'), h.NextAttemptDate) AS due,
            lz.until IS NOT NULL AS leased
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
    INSERT INTO hubsync_lane_inbound AS l (Source, ObjectType, ExternalID, DueDate, HeadId, Leased)
    SELECT Source, ObjectType, ExternalID, due, head_id, leased FROM c WHERE head_id IS NOT NULL
    ON CONFLICT (LaneKey) DO UPDATE SET DueDate = EXCLUDED.DueDate, HeadId = EXCLUDED.HeadId, Leased = EXCLUDED.Leased
    WHERE (l.DueDate, l.HeadId, l.Leased) IS DISTINCT FROM (EXCLUDED.DueDate, EXCLUDED.HeadId, EXCLUDED.Leased);
    RETURN NULL;
END $$;

-- The lanes of the records that hold a lease now.
UPDATE hubsync_lane_inbound l SET Leased = true
FROM (SELECT DISTINCT Source, ObjectType, ExternalID FROM _System_IntegrationInbound WHERE LeaseExpiresDate IS NOT NULL) z
WHERE l.LaneKey = (length(z.Source)::text || ':' || length(z.ObjectType)::text || ':' || z.Source || z.ObjectType || z.ExternalID);

DROP INDEX idx_lane_inbound_due;
CREATE INDEX idx_lane_inbound_leased ON hubsync_lane_inbound (Source, DueDate, HeadId) WHERE Leased;
CREATE INDEX idx_lane_inbound_free ON hubsync_lane_inbound (Source, DueDate, HeadId) WHERE NOT Leased;

CREATE OR REPLACE FUNCTION hubsync_claim_inbound(p_key text, p_now timestamptz, p_limit integer, p_max_per_record integer, p_owner text, p_lease_expires timestamptz)
    RETURNS SETOF _System_IntegrationInbound LANGUAGE plpgsql VOLATILE
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
    SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
    SET plan_cache_mode = force_generic_plan SET hubsync.lanes_kept = 'on'
AS $$
BEGIN
RETURN QUERY
WITH recovered AS MATERIALIZED (
    SELECT n.Source, n.ObjectType, n.ExternalID FROM hubsync_lane_inbound n
    WHERE n.Source = $1 AND n.Leased AND n.DueDate <= $2
    ORDER BY n.Source, n.DueDate, n.HeadId
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), free AS MATERIALIZED (
    SELECT n.Source, n.ObjectType, n.ExternalID FROM hubsync_lane_inbound n
    WHERE n.Source = $1 AND NOT n.Leased AND n.DueDate <= $2
    ORDER BY n.Source, n.DueDate, n.HeadId
    LIMIT $3 - (SELECT COUNT(*) FROM recovered)
    FOR UPDATE SKIP LOCKED
), lanes AS (
    SELECT * FROM recovered UNION ALL SELECT * FROM free
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
    SELECT v.* FROM evs v JOIN _System_IntegrationInbound t ON t.Id = v.Id
    WHERE ((t.Status = 'pending' AND t.NextAttemptDate <= $2)
      OR (t.Status = 'processing' AND t.LeaseExpiresDate < $2)) OR t.Status NOT IN ('pending', 'processing')
    FOR UPDATE OF t SKIP LOCKED
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
    SET DueDate = GREATEST(n.DueDate, $6 + interval '1 microsecond'), Leased = true
    WHERE n.LaneKey = ANY (ARRAY(SELECT (length(r.Source)::text || ':' || length(r.ObjectType)::text || ':' || r.Source || r.ObjectType || r.ExternalID) FROM leased r))
)
SELECT r.* FROM leased r;
END
$$;

-- outbound
ALTER TABLE hubsync_lane_outbound ADD COLUMN Leased boolean NOT NULL DEFAULT false;

CREATE OR REPLACE FUNCTION hubsync_lane_outbound_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A new event never precedes its record's head; only a record without a
    -- lane gets one. The no-op update of an existing lane locks it, so a
    -- transaction that is recomputing it (and might delete it) waits for this
    -- one and then sees the new event.
    INSERT INTO hubsync_lane_outbound AS l (Destination, ObjectType, RecordID, DueDate, HeadId, Leased)
    SELECT DISTINCT ON (Destination, ObjectType, RecordID) Destination, ObjectType, RecordID,
        CASE WHEN Status = 'processing' THEN LeaseExpiresDate + interval '1 microsecond' ELSE NextAttemptDate END, Id,
        Status = 'processing'
    FROM new_rows WHERE Status IN ('pending', 'processing')
    ORDER BY Destination, ObjectType, RecordID, Lane
    ON CONFLICT (LaneKey) DO UPDATE SET HeadId = l.HeadId;
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
                              lz.until + interval '1 microsecond'), h.NextAttemptDate) AS due,
            lz.until IS NOT NULL AS leased
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
    INSERT INTO hubsync_lane_outbound AS l (Destination, ObjectType, RecordID, DueDate, HeadId, Leased)
    SELECT Destination, ObjectType, RecordID, due, head_id, leased FROM c WHERE head_id IS NOT NULL
    ON CONFLICT (LaneKey) DO UPDATE SET DueDate = EXCLUDED.DueDate, HeadId = EXCLUDED.HeadId, Leased = EXCLUDED.Leased
    WHERE (l.DueDate, l.HeadId, l.Leased) IS DISTINCT FROM (EXCLUDED.DueDate, EXCLUDED.HeadId, EXCLUDED.Leased);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION hubsync_lane_outbound_deleted() RETURNS trigger LANGUAGE plpgsql
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $$
BEGIN
    PERFORM 1 FROM (
        WITH r AS MATERIALIZED (SELECT DISTINCT Destination, ObjectType, RecordID FROM old_rows WHERE Status IN ('pending', 'processing') ORDER BY Destination, ObjectType, RecordID)
        SELECT 1 FROM r CROSS JOIN LATERAL (
            SELECT 1 FROM hubsync_lane_outbound l WHERE l.LaneKey = (length(r.Destination)::text || ':' || length(r.ObjectType)::text || ':' || r.Destination || r.ObjectType || r.RecordID) FOR UPDATE OF l) x) locks;
    WITH r AS (
        SELECT DISTINCT Destination, ObjectType, RecordID FROM old_rows WHERE Status IN ('pending', 'processing')
    ), c AS (
        SELECT r.Destination, r.ObjectType, r.RecordID, h.Id AS head_id,
            COALESCE(GREATEST(CASE WHEN h.Status = 'pending' THEN h.NextAttemptDate END,
                              lz.until + interval '1 microsecond'), h.NextAttemptDate) AS due,
            lz.until IS NOT NULL AS leased
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
    INSERT INTO hubsync_lane_outbound AS l (Destination, ObjectType, RecordID, DueDate, HeadId, Leased)
    SELECT Destination, ObjectType, RecordID, due, head_id, leased FROM c WHERE head_id IS NOT NULL
    ON CONFLICT (LaneKey) DO UPDATE SET DueDate = EXCLUDED.DueDate, HeadId = EXCLUDED.HeadId, Leased = EXCLUDED.Leased
    WHERE (l.DueDate, l.HeadId, l.Leased) IS DISTINCT FROM (EXCLUDED.DueDate, EXCLUDED.HeadId, EXCLUDED.Leased);
    RETURN NULL;
END $$;

-- The lanes of the records that hold a lease now.
UPDATE hubsync_lane_outbound l SET Leased = true
FROM (SELECT DISTINCT Destination, ObjectType, RecordID FROM _System_IntegrationOutbound WHERE LeaseExpiresDate IS NOT NULL) z
WHERE l.LaneKey = (length(z.Destination)::text || ':' || length(z.ObjectType)::text || ':' || z.Destination || z.ObjectType || z.RecordID);

DROP INDEX idx_lane_outbound_due;
CREATE INDEX idx_lane_outbound_leased ON hubsync_lane_outbound (Destination, DueDate, HeadId) WHERE Leased;
CREATE INDEX idx_lane_outbound_free ON hubsync_lane_outbound (Destination, DueDate, HeadId) WHERE NOT Leased;

CREATE OR REPLACE FUNCTION hubsync_claim_outbound(p_key text, p_now timestamptz, p_limit integer, p_max_per_record integer, p_owner text, p_lease_expires timestamptz)
    RETURNS SETOF _System_IntegrationOutbound LANGUAGE plpgsql VOLATILE
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
    SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
    SET plan_cache_mode = force_generic_plan SET hubsync.lanes_kept = 'on'
AS $$
BEGIN
RETURN QUERY
WITH recovered AS MATERIALIZED (
    SELECT n.Destination, n.ObjectType, n.RecordID FROM hubsync_lane_outbound n
    WHERE n.Destination = $1 AND n.Leased AND n.DueDate <= $2
    ORDER BY n.Destination, n.DueDate, n.HeadId
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), free AS MATERIALIZED (
    SELECT n.Destination, n.ObjectType, n.RecordID FROM hubsync_lane_outbound n
    WHERE n.Destination = $1 AND NOT n.Leased AND n.DueDate <= $2
    ORDER BY n.Destination, n.DueDate, n.HeadId
    LIMIT $3 - (SELECT COUNT(*) FROM recovered)
    FOR UPDATE SKIP LOCKED
), lanes AS (
    SELECT * FROM recovered UNION ALL SELECT * FROM free
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
    SELECT v.* FROM evs v JOIN _System_IntegrationOutbound t ON t.Id = v.Id
    WHERE ((t.Status = 'pending' AND t.NextAttemptDate <= $2)
      OR (t.Status = 'processing' AND t.LeaseExpiresDate < $2)) OR t.Status NOT IN ('pending', 'processing')
    FOR UPDATE OF t SKIP LOCKED
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
    SET DueDate = GREATEST(n.DueDate, $6 + interval '1 microsecond'), Leased = true
    WHERE n.LaneKey = ANY (ARRAY(SELECT (length(r.Destination)::text || ':' || length(r.ObjectType)::text || ':' || r.Destination || r.ObjectType || r.RecordID) FROM leased r))
)
SELECT r.* FROM leased r;
END
$$;

-- internal
ALTER TABLE hubsync_lane_internal ADD COLUMN Leased boolean NOT NULL DEFAULT false;

CREATE OR REPLACE FUNCTION hubsync_lane_internal_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A new event never precedes its record's head; only a record without a
    -- lane gets one. The no-op update of an existing lane locks it, so a
    -- transaction that is recomputing it (and might delete it) waits for this
    -- one and then sees the new event.
    INSERT INTO hubsync_lane_internal AS l (ObjectType, RecordID, DueDate, HeadId, Leased)
    SELECT DISTINCT ON (ObjectType, RecordID) ObjectType, RecordID,
        CASE WHEN Status = 'processing' THEN LeaseExpiresDate + interval '1 microsecond' ELSE NextAttemptDate END, Id,
        Status = 'processing'
    FROM new_rows WHERE Status IN ('pending', 'processing')
    ORDER BY ObjectType, RecordID, Lane
    ON CONFLICT (LaneKey) DO UPDATE SET HeadId = l.HeadId;
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
                              lz.until + interval '1 microsecond'), h.NextAttemptDate) AS due,
            lz.until IS NOT NULL AS leased
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
    INSERT INTO hubsync_lane_internal AS l (ObjectType, RecordID, DueDate, HeadId, Leased)
    SELECT ObjectType, RecordID, due, head_id, leased FROM c WHERE head_id IS NOT NULL
    ON CONFLICT (LaneKey) DO UPDATE SET DueDate = EXCLUDED.DueDate, HeadId = EXCLUDED.HeadId, Leased = EXCLUDED.Leased
    WHERE (l.DueDate, l.HeadId, l.Leased) IS DISTINCT FROM (EXCLUDED.DueDate, EXCLUDED.HeadId, EXCLUDED.Leased);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION hubsync_lane_internal_deleted() RETURNS trigger LANGUAGE plpgsql
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $$
BEGIN
    PERFORM 1 FROM (
        WITH r AS MATERIALIZED (SELECT DISTINCT ObjectType, RecordID FROM old_rows WHERE Status IN ('pending', 'processing') ORDER BY ObjectType, RecordID)
        SELECT 1 FROM r CROSS JOIN LATERAL (
            SELECT 1 FROM hubsync_lane_internal l WHERE l.LaneKey = (length(r.ObjectType)::text || ':' || r.ObjectType || r.RecordID) FOR UPDATE OF l) x) locks;
    WITH r AS (
        SELECT DISTINCT ObjectType, RecordID FROM old_rows WHERE Status IN ('pending', 'processing')
    ), c AS (
        SELECT r.ObjectType, r.RecordID, h.Id AS head_id,
            COALESCE(GREATEST(CASE WHEN h.Status = 'pending' THEN h.NextAttemptDate END,
                              lz.until + interval '1 microsecond'), h.NextAttemptDate) AS due,
            lz.until IS NOT NULL AS leased
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
    INSERT INTO hubsync_lane_internal AS l (ObjectType, RecordID, DueDate, HeadId, Leased)
    SELECT ObjectType, RecordID, due, head_id, leased FROM c WHERE head_id IS NOT NULL
    ON CONFLICT (LaneKey) DO UPDATE SET DueDate = EXCLUDED.DueDate, HeadId = EXCLUDED.HeadId, Leased = EXCLUDED.Leased
    WHERE (l.DueDate, l.HeadId, l.Leased) IS DISTINCT FROM (EXCLUDED.DueDate, EXCLUDED.HeadId, EXCLUDED.Leased);
    RETURN NULL;
END $$;

-- The lanes of the records that hold a lease now.
UPDATE hubsync_lane_internal l SET Leased = true
FROM (SELECT DISTINCT ObjectType, RecordID FROM _System_OutboxEvent WHERE LeaseExpiresDate IS NOT NULL) z
WHERE l.LaneKey = (length(z.ObjectType)::text || ':' || z.ObjectType || z.RecordID);

DROP INDEX idx_lane_internal_due;
CREATE INDEX idx_lane_internal_leased ON hubsync_lane_internal (DueDate, HeadId) WHERE Leased;
CREATE INDEX idx_lane_internal_free ON hubsync_lane_internal (DueDate, HeadId) WHERE NOT Leased;

CREATE OR REPLACE FUNCTION hubsync_claim_internal(p_now timestamptz, p_limit integer, p_max_per_record integer, p_owner text, p_lease_expires timestamptz)
    RETURNS SETOF _System_OutboxEvent LANGUAGE plpgsql VOLATILE
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
    SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
    SET plan_cache_mode = force_generic_plan SET hubsync.lanes_kept = 'on'
AS $$
BEGIN
RETURN QUERY
WITH recovered AS MATERIALIZED (
    SELECT n.ObjectType, n.RecordID FROM hubsync_lane_internal n
    WHERE n.Leased AND n.DueDate <= $1
    ORDER BY n.DueDate, n.HeadId
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), free AS MATERIALIZED (
    SELECT n.ObjectType, n.RecordID FROM hubsync_lane_internal n
    WHERE NOT n.Leased AND n.DueDate <= $1
    ORDER BY n.DueDate, n.HeadId
    LIMIT $2 - (SELECT COUNT(*) FROM recovered)
    FOR UPDATE SKIP LOCKED
), lanes AS (
    SELECT * FROM recovered UNION ALL SELECT * FROM free
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
    SELECT v.* FROM evs v JOIN _System_OutboxEvent t ON t.Id = v.Id
    WHERE ((t.Status = 'pending' AND t.NextAttemptDate <= $1)
      OR (t.Status = 'processing' AND t.LeaseExpiresDate < $1)) OR t.Status NOT IN ('pending', 'processing')
    FOR UPDATE OF t SKIP LOCKED
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
    SET DueDate = GREATEST(n.DueDate, $5 + interval '1 microsecond'), Leased = true
    WHERE n.LaneKey = ANY (ARRAY(SELECT (length(r.ObjectType)::text || ':' || r.ObjectType || r.RecordID) FROM leased r))
)
SELECT r.* FROM leased r;
END
$$;
