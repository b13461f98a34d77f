-- hubsync's own CRM records, the links between a local record and its id on each
-- destination, and the per-field clocks of the inbound monotonic guard.
-- Timestamps are INTEGER unix microseconds (UTC); JSON is TEXT.

CREATE TABLE hubsync_record (
    ObjectType       TEXT    NOT NULL,
    Id               TEXT    NOT NULL,
    Fields           TEXT    NOT NULL,
    Version          INTEGER NOT NULL,
    CreatedDate      INTEGER NOT NULL,
    LastModifiedDate INTEGER NOT NULL,
    PRIMARY KEY (ObjectType, Id)
) STRICT;

-- A link outlives its record (a deleted record keeps its link, so the delete can
-- still be pushed to the destination and late events recognised).
CREATE TABLE hubsync_link (
    Destination      TEXT    NOT NULL,
    ObjectType       TEXT    NOT NULL,
    RecordID         TEXT    NOT NULL,
    ExternalID       TEXT    NOT NULL,
    CreatedDate      INTEGER NOT NULL,
    LastModifiedDate INTEGER NOT NULL,
    PRIMARY KEY (Destination, ObjectType, RecordID)
) STRICT;
CREATE UNIQUE INDEX idx_hubsync_link_external ON hubsync_link (Destination, ObjectType, ExternalID);

-- OccurredAt of the last value applied to one field of one record; the field
-- "$deleted" is the record's tombstone.
CREATE TABLE hubsync_field_clock (
    ObjectType TEXT    NOT NULL,
    RecordID   TEXT    NOT NULL,
    Field      TEXT    NOT NULL,
    OccurredAt INTEGER NOT NULL,
    PRIMARY KEY (ObjectType, RecordID, Field)
) STRICT;
