-- An event inserted for a record that already has a lane locks the lane
-- without writing it. The insert triggers of migration 024 locked it with a
-- no-op update (SET HeadId = l.HeadId), which wrote a new version of the lane
-- row, and its WAL, for every such event: under a webhook burst most events
-- belong to records that already have events queued, and those versions were
-- 40 % of each insert statement's trigger time (a 1,000-event insert over
-- existing lanes: 24.5 ms of trigger → 14 ms; BENCHMARKS.md, thirteenth
-- session). ON CONFLICT DO UPDATE ... WHERE false takes the same row lock
-- (PostgreSQL locks every conflicting row before it evaluates the WHERE) and
-- updates nothing, so a transaction recomputing the lane still waits for the
-- inserting one and then sees its event, as migration 018 requires.

CREATE OR REPLACE FUNCTION hubsync_lane_inbound_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A new event never precedes its record's head; only a record without a
    -- lane gets one. An existing lane is locked, not written (WHERE false), so
    -- a transaction that is recomputing it (and might delete it) waits for
    -- this one and then sees the new event.
    INSERT INTO hubsync_lane_inbound AS l (Source, ObjectType, ExternalID, DueDate, HeadId, Leased, Claimed)
    SELECT DISTINCT ON (Source, ObjectType, ExternalID) Source, ObjectType, ExternalID,
        CASE WHEN Status = 'processing' THEN LeaseExpiresDate + interval '1 microsecond' ELSE NextAttemptDate END, Id,
        Status = 'processing', Status = 'processing' OR Attempt > 0
    FROM new_rows WHERE Status IN ('pending', 'processing')
    ORDER BY Source, ObjectType, ExternalID, Lane
    ON CONFLICT (LaneKey) DO UPDATE SET HeadId = l.HeadId WHERE false;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION hubsync_lane_outbound_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A new event never precedes its record's head; only a record without a
    -- lane gets one. An existing lane is locked, not written (WHERE false), so
    -- a transaction that is recomputing it (and might delete it) waits for
    -- this one and then sees the new event.
    INSERT INTO hubsync_lane_outbound AS l (Destination, ObjectType, RecordID, DueDate, HeadId, Leased, Claimed)
    SELECT DISTINCT ON (Destination, ObjectType, RecordID) Destination, ObjectType, RecordID,
        CASE WHEN Status = 'processing' THEN LeaseExpiresDate + interval '1 microsecond' ELSE NextAttemptDate END, Id,
        Status = 'processing', Status = 'processing' OR Attempt > 0
    FROM new_rows WHERE Status IN ('pending', 'processing')
    ORDER BY Destination, ObjectType, RecordID, Lane
    ON CONFLICT (LaneKey) DO UPDATE SET HeadId = l.HeadId WHERE false;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION hubsync_lane_internal_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A new event never precedes its record's head; only a record without a
    -- lane gets one. An existing lane is locked, not written (WHERE false), so
    -- a transaction that is recomputing it (and might delete it) waits for
    -- this one and then sees the new event.
    INSERT INTO hubsync_lane_internal AS l (ObjectType, RecordID, DueDate, HeadId, Leased, Claimed)
    SELECT DISTINCT ON (ObjectType, RecordID) ObjectType, RecordID,
        CASE WHEN Status = 'processing' THEN LeaseExpiresDate + interval '1 microsecond' ELSE NextAttemptDate END, Id,
        Status = 'processing', Status = 'processing' OR Attempt > 0
    FROM new_rows WHERE Status IN ('pending', 'processing')
    ORDER BY ObjectType, RecordID, Lane
    ON CONFLICT (LaneKey) DO UPDATE SET HeadId = l.HeadId WHERE false;
    RETURN NULL;
END $$;
