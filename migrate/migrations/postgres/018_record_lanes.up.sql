-- Record lanes (issue 16): the PostgreSQL claim's cost no longer depends on the
-- backlog or on the planner's statistics.
--
-- hubsync_lane_<queue> holds one row per record with unfinished (pending or
-- processing) events: its head (the unfinished event with the lowest Lane) and
-- DueDate, the instant from which the record may be claimed:
--   * the head's NextAttemptDate when the head is pending and no event of the
--     record holds a lease;
--   * otherwise one microsecond after the record's latest lease expiry (a lease
--     is live while LeaseExpiresDate >= now, so the record is claimable from
--     LeaseExpiresDate + 1 us on; timestamps are stored in microseconds).
-- A claim takes the due lanes of its key in (DueDate, HeadId) order with FOR
-- UPDATE SKIP LOCKED and LIMIT n, then reads each claimed record's events by
-- its open index (store/pgstore/sql/Claim.sql): it reads what it returns,
-- whatever the backlog, and every step is an index range or an index probe
-- whatever the statistics say.
--
-- The lanes are kept by statement-level triggers on the queue tables, in the
-- transaction that changes the events, so every writer (the store, the
-- caller's EnqueuePgx and CompleteTx transactions, bulk loads, a future lease
-- extension) keeps them without knowing about them. Inserts only add a lane
-- for a record that has none: a new event always has the record's highest
-- Lane (taken from the record's counter, hubsync_record_seq, locked until
-- commit), so it never changes an existing head. Updates and deletes first lock
-- the lanes of the records they touched, in key order, and only then, in a new
-- statement (so with a snapshot taken after the lock was granted), recompute
-- them from the events table. The last transaction to write a lane therefore
-- sees every committed change of its record. The lanes are only a guide: the
-- claim's UPDATE still re-checks each event (the template "claimable").
--
-- Every claim, complete and release rewrites or deletes lanes, and the claim
-- walks the due index from its oldest entries, where the dead ones gather:
-- the lanes tables are vacuumed after 1,000 + 1 % dead rows rather than the
-- default 50 + 20 % (200,000 dead rows at a million lanes). Index scans also
-- mark the entries of dead rows they meet, so later claims skip them.
--
-- Every statement of the triggers starts from the changed rows and reaches the
-- lanes by primary-key probes (LATERAL, or the ctids those probes return) on
-- LaneKey, one column that encodes the record key unambiguously and that no
-- other index holds: on the record's columns the planner, without
-- statistics, probed the due index by its first column (the key) and filtered
-- every lane of the key instead (estimates of one row each way make a tie).
-- written as a join, the planner was free to put the lanes table on the outer
-- side, and without statistics it did (a nested loop over every lane, times
-- the changed rows: 2.8 s for a 100-event claim over 2,000 lanes). The locks
-- are taken in record-key order (the sorted, materialized r), so that
-- concurrent multi-record statements do not deadlock on lanes.
--
-- The recomputing triggers run with the planner's scans and joins that could
-- read a whole table switched off (SET clauses below): each record is one
-- probe of the open index and one of the lease index, whatever the statistics
-- of the queue table say, as in the claim (the SET clauses of the claim functions, migration 019).

-- inbound: _System_IntegrationInbound
CREATE TABLE hubsync_lane_inbound (
    Source VARCHAR(50) NOT NULL,
    ObjectType VARCHAR(100) NOT NULL,
    ExternalID VARCHAR(255) NOT NULL,
    DueDate TIMESTAMPTZ NOT NULL,
    HeadId VARCHAR(255) NOT NULL,
    LaneKey TEXT GENERATED ALWAYS AS (length(Source)::text || ':' || length(ObjectType)::text || ':' || Source || ObjectType || ExternalID) STORED PRIMARY KEY
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
CREATE INDEX idx_lane_inbound_due ON hubsync_lane_inbound (Source, DueDate, HeadId);

CREATE FUNCTION hubsync_lane_inbound_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A new event never precedes its record's head; only a record without a
    -- lane gets one. The no-op update of an existing lane locks it, so a
    -- transaction that is recomputing it (and might delete it) waits for this
    -- one and then sees the new event.
    INSERT INTO hubsync_lane_inbound AS l (Source, ObjectType, ExternalID, DueDate, HeadId)
    SELECT DISTINCT ON (Source, ObjectType, ExternalID) Source, ObjectType, ExternalID,
        CASE WHEN Status = 'processing' THEN LeaseExpiresDate + interval '1 microsecond' ELSE NextAttemptDate END, Id
    FROM new_rows WHERE Status IN ('pending', 'processing')
    ORDER BY Source, ObjectType, ExternalID, Lane
    ON CONFLICT (LaneKey) DO UPDATE SET HeadId = l.HeadId;
    RETURN NULL;
END $$;

CREATE FUNCTION hubsync_lane_inbound_updated() RETURNS trigger LANGUAGE plpgsql
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $$
BEGIN
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

CREATE FUNCTION hubsync_lane_inbound_deleted() RETURNS trigger LANGUAGE plpgsql
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

-- TRUNCATE fires no row or DELETE trigger: it empties the lanes too, or their
-- lanes would stay due with no events and take places in every claim.
CREATE FUNCTION hubsync_lane_inbound_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM hubsync_lane_inbound;
    RETURN NULL;
END $$;

CREATE TRIGGER hubsync_lane_inbound_ins AFTER INSERT ON _System_IntegrationInbound
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION hubsync_lane_inbound_inserted();
CREATE TRIGGER hubsync_lane_inbound_upd AFTER UPDATE ON _System_IntegrationInbound
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION hubsync_lane_inbound_updated();
CREATE TRIGGER hubsync_lane_inbound_del AFTER DELETE ON _System_IntegrationInbound
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION hubsync_lane_inbound_deleted();
CREATE TRIGGER hubsync_lane_inbound_trunc AFTER TRUNCATE ON _System_IntegrationInbound
    FOR EACH STATEMENT EXECUTE FUNCTION hubsync_lane_inbound_truncated();

-- The lanes of the events already queued.
INSERT INTO hubsync_lane_inbound (Source, ObjectType, ExternalID, DueDate, HeadId)
SELECT h.Source, h.ObjectType, h.ExternalID,
    COALESCE(GREATEST(CASE WHEN h.Status = 'pending' THEN h.NextAttemptDate END,
                      lz.until + interval '1 microsecond'), h.NextAttemptDate), h.Id
FROM (SELECT DISTINCT ON (Source, ObjectType, ExternalID) Source, ObjectType, ExternalID, Id, Status, NextAttemptDate FROM _System_IntegrationInbound
      WHERE Status IN ('pending', 'processing') ORDER BY Source, ObjectType, ExternalID, Lane) h
LEFT JOIN (SELECT Source, ObjectType, ExternalID, MAX(LeaseExpiresDate) AS until FROM _System_IntegrationInbound
           WHERE LeaseExpiresDate IS NOT NULL GROUP BY Source, ObjectType, ExternalID) lz ON lz.Source = h.Source AND lz.ObjectType = h.ObjectType AND lz.ExternalID = h.ExternalID;

-- outbound: _System_IntegrationOutbound
CREATE TABLE hubsync_lane_outbound (
    Destination VARCHAR(50) NOT NULL,
    ObjectType VARCHAR(100) NOT NULL,
    RecordID VARCHAR(255) NOT NULL,
    DueDate TIMESTAMPTZ NOT NULL,
    HeadId VARCHAR(255) NOT NULL,
    LaneKey TEXT GENERATED ALWAYS AS (length(Destination)::text || ':' || length(ObjectType)::text || ':' || Destination || ObjectType || RecordID) STORED PRIMARY KEY
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
CREATE INDEX idx_lane_outbound_due ON hubsync_lane_outbound (Destination, DueDate, HeadId);

CREATE FUNCTION hubsync_lane_outbound_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A new event never precedes its record's head; only a record without a
    -- lane gets one. The no-op update of an existing lane locks it, so a
    -- transaction that is recomputing it (and might delete it) waits for this
    -- one and then sees the new event.
    INSERT INTO hubsync_lane_outbound AS l (Destination, ObjectType, RecordID, DueDate, HeadId)
    SELECT DISTINCT ON (Destination, ObjectType, RecordID) Destination, ObjectType, RecordID,
        CASE WHEN Status = 'processing' THEN LeaseExpiresDate + interval '1 microsecond' ELSE NextAttemptDate END, Id
    FROM new_rows WHERE Status IN ('pending', 'processing')
    ORDER BY Destination, ObjectType, RecordID, Lane
    ON CONFLICT (LaneKey) DO UPDATE SET HeadId = l.HeadId;
    RETURN NULL;
END $$;

CREATE FUNCTION hubsync_lane_outbound_updated() RETURNS trigger LANGUAGE plpgsql
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $$
BEGIN
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

CREATE FUNCTION hubsync_lane_outbound_deleted() RETURNS trigger LANGUAGE plpgsql
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

-- TRUNCATE fires no row or DELETE trigger: it empties the lanes too, or their
-- lanes would stay due with no events and take places in every claim.
CREATE FUNCTION hubsync_lane_outbound_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM hubsync_lane_outbound;
    RETURN NULL;
END $$;

CREATE TRIGGER hubsync_lane_outbound_ins AFTER INSERT ON _System_IntegrationOutbound
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION hubsync_lane_outbound_inserted();
CREATE TRIGGER hubsync_lane_outbound_upd AFTER UPDATE ON _System_IntegrationOutbound
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION hubsync_lane_outbound_updated();
CREATE TRIGGER hubsync_lane_outbound_del AFTER DELETE ON _System_IntegrationOutbound
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION hubsync_lane_outbound_deleted();
CREATE TRIGGER hubsync_lane_outbound_trunc AFTER TRUNCATE ON _System_IntegrationOutbound
    FOR EACH STATEMENT EXECUTE FUNCTION hubsync_lane_outbound_truncated();

-- The lanes of the events already queued.
INSERT INTO hubsync_lane_outbound (Destination, ObjectType, RecordID, DueDate, HeadId)
SELECT h.Destination, h.ObjectType, h.RecordID,
    COALESCE(GREATEST(CASE WHEN h.Status = 'pending' THEN h.NextAttemptDate END,
                      lz.until + interval '1 microsecond'), h.NextAttemptDate), h.Id
FROM (SELECT DISTINCT ON (Destination, ObjectType, RecordID) Destination, ObjectType, RecordID, Id, Status, NextAttemptDate FROM _System_IntegrationOutbound
      WHERE Status IN ('pending', 'processing') ORDER BY Destination, ObjectType, RecordID, Lane) h
LEFT JOIN (SELECT Destination, ObjectType, RecordID, MAX(LeaseExpiresDate) AS until FROM _System_IntegrationOutbound
           WHERE LeaseExpiresDate IS NOT NULL GROUP BY Destination, ObjectType, RecordID) lz ON lz.Destination = h.Destination AND lz.ObjectType = h.ObjectType AND lz.RecordID = h.RecordID;

-- internal: _System_OutboxEvent
CREATE TABLE hubsync_lane_internal (
    ObjectType VARCHAR(100) NOT NULL,
    RecordID VARCHAR(255) NOT NULL,
    DueDate TIMESTAMPTZ NOT NULL,
    HeadId VARCHAR(255) NOT NULL,
    LaneKey TEXT GENERATED ALWAYS AS (length(ObjectType)::text || ':' || ObjectType || RecordID) STORED PRIMARY KEY
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
CREATE INDEX idx_lane_internal_due ON hubsync_lane_internal (DueDate, HeadId);

CREATE FUNCTION hubsync_lane_internal_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A new event never precedes its record's head; only a record without a
    -- lane gets one. The no-op update of an existing lane locks it, so a
    -- transaction that is recomputing it (and might delete it) waits for this
    -- one and then sees the new event.
    INSERT INTO hubsync_lane_internal AS l (ObjectType, RecordID, DueDate, HeadId)
    SELECT DISTINCT ON (ObjectType, RecordID) ObjectType, RecordID,
        CASE WHEN Status = 'processing' THEN LeaseExpiresDate + interval '1 microsecond' ELSE NextAttemptDate END, Id
    FROM new_rows WHERE Status IN ('pending', 'processing')
    ORDER BY ObjectType, RecordID, Lane
    ON CONFLICT (LaneKey) DO UPDATE SET HeadId = l.HeadId;
    RETURN NULL;
END $$;

CREATE FUNCTION hubsync_lane_internal_updated() RETURNS trigger LANGUAGE plpgsql
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $$
BEGIN
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

CREATE FUNCTION hubsync_lane_internal_deleted() RETURNS trigger LANGUAGE plpgsql
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

-- TRUNCATE fires no row or DELETE trigger: it empties the lanes too, or their
-- lanes would stay due with no events and take places in every claim.
CREATE FUNCTION hubsync_lane_internal_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM hubsync_lane_internal;
    RETURN NULL;
END $$;

CREATE TRIGGER hubsync_lane_internal_ins AFTER INSERT ON _System_OutboxEvent
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION hubsync_lane_internal_inserted();
CREATE TRIGGER hubsync_lane_internal_upd AFTER UPDATE ON _System_OutboxEvent
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION hubsync_lane_internal_updated();
CREATE TRIGGER hubsync_lane_internal_del AFTER DELETE ON _System_OutboxEvent
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION hubsync_lane_internal_deleted();
CREATE TRIGGER hubsync_lane_internal_trunc AFTER TRUNCATE ON _System_OutboxEvent
    FOR EACH STATEMENT EXECUTE FUNCTION hubsync_lane_internal_truncated();

-- The lanes of the events already queued.
INSERT INTO hubsync_lane_internal (ObjectType, RecordID, DueDate, HeadId)
SELECT h.ObjectType, h.RecordID,
    COALESCE(GREATEST(CASE WHEN h.Status = 'pending' THEN h.NextAttemptDate END,
                      lz.until + interval '1 microsecond'), h.NextAttemptDate), h.Id
FROM (SELECT DISTINCT ON (ObjectType, RecordID) ObjectType, RecordID, Id, Status, NextAttemptDate FROM _System_OutboxEvent
      WHERE Status IN ('pending', 'processing') ORDER BY ObjectType, RecordID, Lane) h
LEFT JOIN (SELECT ObjectType, RecordID, MAX(LeaseExpiresDate) AS until FROM _System_OutboxEvent
           WHERE LeaseExpiresDate IS NOT NULL GROUP BY ObjectType, RecordID) lz ON lz.ObjectType = h.ObjectType AND lz.RecordID = h.RecordID;
