-- The claim takes the records claimed before first, not only expired leases
-- (migration 023). A record's lane is due at its head's NextAttemptDate when
-- no event of the record holds a lease (migration 018), and 023's claim took
-- the lanes without a lease in (DueDate, HeadId) order. A record whose head
-- was leased and then went back to pending with a delay therefore sorted at
-- the end of its delay, behind every record queued before that, although it
-- was queued before them: outbound releases a cycle's records with a delay
-- when the shared HubSpot budget refuses (Release: pending again,
-- NextAttemptDate = now + delay, Attempt kept), and a failure puts the event
-- in backoff (IncrementRetry: the same, RetryCount + 1). SQLite and MariaDB
-- order their candidates by the head's CreatedDate, which neither changes:
-- there such a record, once due, goes before the records queued after it.
--
-- The rule every store meets (storetest ClaimedBeforeKeepsPlace, with
-- ExpiredLeaseFirst): a record whose head was claimed before and is due again
-- (its lease expired, or it was released, retried after a failure, or
-- requeued from the dead letters: Requeue keeps Attempt too) is claimed
-- before the records queued after it, and never waits behind the backlog that
-- built up during its lease or its delay.
--
-- Each lane now also says whether its record was claimed before: Claimed is
-- true iff one of the record's events holds a lease (live or expired: 023's
-- Leased) or the head's Attempt > 0 (only a claim raises Attempt; Release,
-- IncrementRetry and Requeue keep it). idx_lane_<queue>_leased and
-- idx_lane_<queue>_free (WHERE NOT Leased) are replaced by
-- idx_lane_<queue>_claimed (WHERE Claimed) and idx_lane_<queue>_free (WHERE
-- NOT Claimed), on the same columns. The claim's recovered CTE takes up to
-- @limit due Claimed lanes, oldest DueDate first (an expired lease's expiry
-- + 1 us, or the end of the release's delay or of the backoff); free takes the
-- remaining places from the lanes whose head was never claimed, in (DueDate,
-- HeadId) order, where DueDate is the head's NextAttemptDate, which the store
-- sets to its CreatedDate. Each is still an index range in order
-- with its LIMIT under FOR UPDATE SKIP LOCKED, with no sort
-- (TestReleasedClaimWithoutStatistics, TestRecoveredClaimWithoutStatistics),
-- and the lane lock re-checks Claimed as it did Leased (migration 023).
-- Pending.sql lists the same heads. Among the records claimed before,
-- PostgreSQL goes by due date where SQLite and MariaDB go by creation; and a
-- record claimed before goes before a never-claimed one queued earlier that
-- is still waiting, where they go by creation. Both only decide which due
-- record goes first (fairness), never the order within a record.
--
-- Who keeps Claimed: the claim's kept CTE sets it (with Leased: the records
-- it leased hold a lease now); the insert trigger sets it for a new lane from
-- its head (Status = 'processing' OR Attempt > 0); the update and delete
-- triggers recompute it from the lease probe and the head probe they already
-- make (the head probe now also reads Attempt). The trigger functions are
-- migration 023's otherwise, the update trigger's early return under
-- hubsync.lanes_kept and the functions' SET clauses included.
-- TestLanesFollowEveryChange and TestLanesUnderConcurrentWriters compare
-- Claimed with the events as they do DueDate, HeadId and Leased. Leased no
-- longer orders anything; it is kept, and kept exact, so that a write that
-- waited for a lanes table while this migration held it, and runs 023's
-- trigger body afterwards, still finds the column it writes.
--
-- The backfill marks the existing lanes after the trigger functions are
-- replaced, from the events: the records with an event under a lease, then
-- the lanes whose head has Attempt > 0 (TestMigrationMarksClaimedLanes). As
-- in 023, a write that runs the old trigger body leaves its lane's Claimed as
-- it was until the record's next change: the flag orders the claim only, so
-- such a record is at worst claimed in the old order once.
--
-- Dead index entries: a lane leaves the claimed index when its record is
-- finished or its next head was never claimed, and moves within it at every
-- claim, release and retry; its dead entries are those 023 describes for the
-- leased index, and cost the same (killed on first visit, vacuumed under the
-- lanes' autovacuum settings of migration 018).
--
-- The claim functions are migration 023's with Claim.sql's new body
-- (TestClaimFunctionsMatchClaimSQL); their parameters and SET clauses are
-- unchanged.

-- inbound
ALTER TABLE hubsync_lane_inbound ADD COLUMN Claimed boolean NOT NULL DEFAULT false;

CREATE OR REPLACE FUNCTION hubsync_lane_inbound_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A new event never precedes its record's head; only a record without a
    -- lane gets one. The no-op update of an existing lane locks it, so a
    -- transaction that is recomputing it (and might delete it) waits for this
    -- one and then sees the new event.
    INSERT INTO hubsync_lane_inbound AS l (Source, ObjectType, ExternalID, DueDate, HeadId, Leased, Claimed)
    SELECT DISTINCT ON (Source, ObjectType, ExternalID) Source, ObjectType, ExternalID,
        CASE WHEN Status = 'processing' THEN LeaseExpiresDate + interval '1 microsecond' ELSE NextAttemptDate END, Id,
        Status = 'processing', Status = 'processing' OR Attempt > 0
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
            lz.until IS NOT NULL AS leased,
            lz.until IS NOT NULL OR h.Attempt > 0 AS claimed
        FROM r
        LEFT JOIN LATERAL (
            SELECT x.Id, x.Status, x.NextAttemptDate, x.Attempt FROM _System_IntegrationInbound x
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
    INSERT INTO hubsync_lane_inbound AS l (Source, ObjectType, ExternalID, DueDate, HeadId, Leased, Claimed)
    SELECT Source, ObjectType, ExternalID, due, head_id, leased, claimed FROM c WHERE head_id IS NOT NULL
    ON CONFLICT (LaneKey) DO UPDATE SET DueDate = EXCLUDED.DueDate, HeadId = EXCLUDED.HeadId, Leased = EXCLUDED.Leased, Claimed = EXCLUDED.Claimed
    WHERE (l.DueDate, l.HeadId, l.Leased, l.Claimed) IS DISTINCT FROM (EXCLUDED.DueDate, EXCLUDED.HeadId, EXCLUDED.Leased, EXCLUDED.Claimed);
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
            lz.until IS NOT NULL AS leased,
            lz.until IS NOT NULL OR h.Attempt > 0 AS claimed
        FROM r
        LEFT JOIN LATERAL (
            SELECT x.Id, x.Status, x.NextAttemptDate, x.Attempt FROM _System_IntegrationInbound x
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
    INSERT INTO hubsync_lane_inbound AS l (Source, ObjectType, ExternalID, DueDate, HeadId, Leased, Claimed)
    SELECT Source, ObjectType, ExternalID, due, head_id, leased, claimed FROM c WHERE head_id IS NOT NULL
    ON CONFLICT (LaneKey) DO UPDATE SET DueDate = EXCLUDED.DueDate, HeadId = EXCLUDED.HeadId, Leased = EXCLUDED.Leased, Claimed = EXCLUDED.Claimed
    WHERE (l.DueDate, l.HeadId, l.Leased, l.Claimed) IS DISTINCT FROM (EXCLUDED.DueDate, EXCLUDED.HeadId, EXCLUDED.Leased, EXCLUDED.Claimed);
    RETURN NULL;
END $$;

-- The lanes of the records claimed before: those that hold a lease, live or
-- expired, then those whose head was leased before.
UPDATE hubsync_lane_inbound l SET Claimed = true
FROM (SELECT DISTINCT Source, ObjectType, ExternalID FROM _System_IntegrationInbound WHERE LeaseExpiresDate IS NOT NULL) z
WHERE l.LaneKey = (length(z.Source)::text || ':' || length(z.ObjectType)::text || ':' || z.Source || z.ObjectType || z.ExternalID);
UPDATE hubsync_lane_inbound l SET Claimed = true
FROM _System_IntegrationInbound e
WHERE e.Id = l.HeadId AND e.Attempt > 0 AND NOT l.Claimed;

DROP INDEX idx_lane_inbound_leased;
DROP INDEX idx_lane_inbound_free;
CREATE INDEX idx_lane_inbound_claimed ON hubsync_lane_inbound (Source, DueDate, HeadId) WHERE Claimed;
CREATE INDEX idx_lane_inbound_free ON hubsync_lane_inbound (Source, DueDate, HeadId) WHERE NOT Claimed;

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
    WHERE n.Source = $1 AND n.Claimed AND n.DueDate <= $2
    ORDER BY n.Source, n.DueDate, n.HeadId
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), free AS MATERIALIZED (
    SELECT n.Source, n.ObjectType, n.ExternalID FROM hubsync_lane_inbound n
    WHERE n.Source = $1 AND NOT n.Claimed AND n.DueDate <= $2
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
    SET DueDate = GREATEST(n.DueDate, $6 + interval '1 microsecond'), Leased = true, Claimed = true
    WHERE n.LaneKey = ANY (ARRAY(SELECT (length(r.Source)::text || ':' || length(r.ObjectType)::text || ':' || r.Source || r.ObjectType || r.ExternalID) FROM leased r))
)
SELECT r.* FROM leased r;
END
$$;

-- outbound
ALTER TABLE hubsync_lane_outbound ADD COLUMN Claimed boolean NOT NULL DEFAULT false;

CREATE OR REPLACE FUNCTION hubsync_lane_outbound_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A new event never precedes its record's head; only a record without a
    -- lane gets one. The no-op update of an existing lane locks it, so a
    -- transaction that is recomputing it (and might delete it) waits for this
    -- one and then sees the new event.
    INSERT INTO hubsync_lane_outbound AS l (Destination, ObjectType, RecordID, DueDate, HeadId, Leased, Claimed)
    SELECT DISTINCT ON (Destination, ObjectType, RecordID) Destination, ObjectType, RecordID,
        CASE WHEN Status = 'processing' THEN LeaseExpiresDate + interval '1 microsecond' ELSE NextAttemptDate END, Id,
        Status = 'processing', Status = 'processing' OR Attempt > 0
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
            lz.until IS NOT NULL AS leased,
            lz.until IS NOT NULL OR h.Attempt > 0 AS claimed
        FROM r
        LEFT JOIN LATERAL (
            SELECT x.Id, x.Status, x.NextAttemptDate, x.Attempt FROM _System_IntegrationOutbound x
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
    INSERT INTO hubsync_lane_outbound AS l (Destination, ObjectType, RecordID, DueDate, HeadId, Leased, Claimed)
    SELECT Destination, ObjectType, RecordID, due, head_id, leased, claimed FROM c WHERE head_id IS NOT NULL
    ON CONFLICT (LaneKey) DO UPDATE SET DueDate = EXCLUDED.DueDate, HeadId = EXCLUDED.HeadId, Leased = EXCLUDED.Leased, Claimed = EXCLUDED.Claimed
    WHERE (l.DueDate, l.HeadId, l.Leased, l.Claimed) IS DISTINCT FROM (EXCLUDED.DueDate, EXCLUDED.HeadId, EXCLUDED.Leased, EXCLUDED.Claimed);
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
            lz.until IS NOT NULL AS leased,
            lz.until IS NOT NULL OR h.Attempt > 0 AS claimed
        FROM r
        LEFT JOIN LATERAL (
            SELECT x.Id, x.Status, x.NextAttemptDate, x.Attempt FROM _System_IntegrationOutbound x
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
    INSERT INTO hubsync_lane_outbound AS l (Destination, ObjectType, RecordID, DueDate, HeadId, Leased, Claimed)
    SELECT Destination, ObjectType, RecordID, due, head_id, leased, claimed FROM c WHERE head_id IS NOT NULL
    ON CONFLICT (LaneKey) DO UPDATE SET DueDate = EXCLUDED.DueDate, HeadId = EXCLUDED.HeadId, Leased = EXCLUDED.Leased, Claimed = EXCLUDED.Claimed
    WHERE (l.DueDate, l.HeadId, l.Leased, l.Claimed) IS DISTINCT FROM (EXCLUDED.DueDate, EXCLUDED.HeadId, EXCLUDED.Leased, EXCLUDED.Claimed);
    RETURN NULL;
END $$;

-- The lanes of the records claimed before: those that hold a lease, live or
-- expired, then those whose head was leased before.
UPDATE hubsync_lane_outbound l SET Claimed = true
FROM (SELECT DISTINCT Destination, ObjectType, RecordID FROM _System_IntegrationOutbound WHERE LeaseExpiresDate IS NOT NULL) z
WHERE l.LaneKey = (length(z.Destination)::text || ':' || length(z.ObjectType)::text || ':' || z.Destination || z.ObjectType || z.RecordID);
UPDATE hubsync_lane_outbound l SET Claimed = true
FROM _System_IntegrationOutbound e
WHERE e.Id = l.HeadId AND e.Attempt > 0 AND NOT l.Claimed;

DROP INDEX idx_lane_outbound_leased;
DROP INDEX idx_lane_outbound_free;
CREATE INDEX idx_lane_outbound_claimed ON hubsync_lane_outbound (Destination, DueDate, HeadId) WHERE Claimed;
CREATE INDEX idx_lane_outbound_free ON hubsync_lane_outbound (Destination, DueDate, HeadId) WHERE NOT Claimed;

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
    WHERE n.Destination = $1 AND n.Claimed AND n.DueDate <= $2
    ORDER BY n.Destination, n.DueDate, n.HeadId
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), free AS MATERIALIZED (
    SELECT n.Destination, n.ObjectType, n.RecordID FROM hubsync_lane_outbound n
    WHERE n.Destination = $1 AND NOT n.Claimed AND n.DueDate <= $2
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
    SET DueDate = GREATEST(n.DueDate, $6 + interval '1 microsecond'), Leased = true, Claimed = true
    WHERE n.LaneKey = ANY (ARRAY(SELECT (length(r.Destination)::text || ':' || length(r.ObjectType)::text || ':' || r.Destination || r.ObjectType || r.RecordID) FROM leased r))
)
SELECT r.* FROM leased r;
END
$$;

-- internal
ALTER TABLE hubsync_lane_internal ADD COLUMN Claimed boolean NOT NULL DEFAULT false;

CREATE OR REPLACE FUNCTION hubsync_lane_internal_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A new event never precedes its record's head; only a record without a
    -- lane gets one. The no-op update of an existing lane locks it, so a
    -- transaction that is recomputing it (and might delete it) waits for this
    -- one and then sees the new event.
    INSERT INTO hubsync_lane_internal AS l (ObjectType, RecordID, DueDate, HeadId, Leased, Claimed)
    SELECT DISTINCT ON (ObjectType, RecordID) ObjectType, RecordID,
        CASE WHEN Status = 'processing' THEN LeaseExpiresDate + interval '1 microsecond' ELSE NextAttemptDate END, Id,
        Status = 'processing', Status = 'processing' OR Attempt > 0
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
            lz.until IS NOT NULL AS leased,
            lz.until IS NOT NULL OR h.Attempt > 0 AS claimed
        FROM r
        LEFT JOIN LATERAL (
            SELECT x.Id, x.Status, x.NextAttemptDate, x.Attempt FROM _System_OutboxEvent x
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
    INSERT INTO hubsync_lane_internal AS l (ObjectType, RecordID, DueDate, HeadId, Leased, Claimed)
    SELECT ObjectType, RecordID, due, head_id, leased, claimed FROM c WHERE head_id IS NOT NULL
    ON CONFLICT (LaneKey) DO UPDATE SET DueDate = EXCLUDED.DueDate, HeadId = EXCLUDED.HeadId, Leased = EXCLUDED.Leased, Claimed = EXCLUDED.Claimed
    WHERE (l.DueDate, l.HeadId, l.Leased, l.Claimed) IS DISTINCT FROM (EXCLUDED.DueDate, EXCLUDED.HeadId, EXCLUDED.Leased, EXCLUDED.Claimed);
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
            lz.until IS NOT NULL AS leased,
            lz.until IS NOT NULL OR h.Attempt > 0 AS claimed
        FROM r
        LEFT JOIN LATERAL (
            SELECT x.Id, x.Status, x.NextAttemptDate, x.Attempt FROM _System_OutboxEvent x
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
    INSERT INTO hubsync_lane_internal AS l (ObjectType, RecordID, DueDate, HeadId, Leased, Claimed)
    SELECT ObjectType, RecordID, due, head_id, leased, claimed FROM c WHERE head_id IS NOT NULL
    ON CONFLICT (LaneKey) DO UPDATE SET DueDate = EXCLUDED.DueDate, HeadId = EXCLUDED.HeadId, Leased = EXCLUDED.Leased, Claimed = EXCLUDED.Claimed
    WHERE (l.DueDate, l.HeadId, l.Leased, l.Claimed) IS DISTINCT FROM (EXCLUDED.DueDate, EXCLUDED.HeadId, EXCLUDED.Leased, EXCLUDED.Claimed);
    RETURN NULL;
END $$;

-- The lanes of the records claimed before: those that hold a lease, live or
-- expired, then those whose head was leased before.
UPDATE hubsync_lane_internal l SET Claimed = true
FROM (SELECT DISTINCT ObjectType, RecordID FROM _System_OutboxEvent WHERE LeaseExpiresDate IS NOT NULL) z
WHERE l.LaneKey = (length(z.ObjectType)::text || ':' || z.ObjectType || z.RecordID);
UPDATE hubsync_lane_internal l SET Claimed = true
FROM _System_OutboxEvent e
WHERE e.Id = l.HeadId AND e.Attempt > 0 AND NOT l.Claimed;

DROP INDEX idx_lane_internal_leased;
DROP INDEX idx_lane_internal_free;
CREATE INDEX idx_lane_internal_claimed ON hubsync_lane_internal (DueDate, HeadId) WHERE Claimed;
CREATE INDEX idx_lane_internal_free ON hubsync_lane_internal (DueDate, HeadId) WHERE NOT Claimed;

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
    WHERE n.Claimed AND n.DueDate <= $1
    ORDER BY n.DueDate, n.HeadId
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), free AS MATERIALIZED (
    SELECT n.ObjectType, n.RecordID FROM hubsync_lane_internal n
    WHERE NOT n.Claimed AND n.DueDate <= $1
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
    SET DueDate = GREATEST(n.DueDate, $5 + interval '1 microsecond'), Leased = true, Claimed = true
    WHERE n.LaneKey = ANY (ARRAY(SELECT (length(r.ObjectType)::text || ':' || r.ObjectType || r.RecordID) FROM leased r))
)
SELECT r.* FROM leased r;
END
$$;
