-- hubsync's own CRM records, the links between a local record and its id on each
-- destination, and the per-field clocks of the inbound monotonic guard.

CREATE TABLE hubsync_record (
    ObjectType       VARCHAR(100) NOT NULL,
    Id               VARCHAR(255) NOT NULL,
    Fields           JSONB        NOT NULL,
    Version          BIGINT       NOT NULL,
    CreatedDate      TIMESTAMPTZ  NOT NULL,
    LastModifiedDate TIMESTAMPTZ  NOT NULL,
    PRIMARY KEY (ObjectType, Id)
);

-- A link outlives its record (a deleted record keeps its link, so the delete can
-- still be pushed to the destination and late events recognised).
CREATE TABLE hubsync_link (
    Destination      VARCHAR(50)  NOT NULL,
    ObjectType       VARCHAR(100) NOT NULL,
    RecordID         VARCHAR(255) NOT NULL,
    ExternalID       VARCHAR(255) NOT NULL,
    CreatedDate      TIMESTAMPTZ  NOT NULL,
    LastModifiedDate TIMESTAMPTZ  NOT NULL,
    PRIMARY KEY (Destination, ObjectType, RecordID)
);
CREATE UNIQUE INDEX idx_hubsync_link_external ON hubsync_link (Destination, ObjectType, ExternalID);

-- OccurredAt of the last value applied to one field of one record; the field
-- "$deleted" is the record's tombstone.
CREATE TABLE hubsync_field_clock (
    ObjectType VARCHAR(100) NOT NULL,
    RecordID   VARCHAR(255) NOT NULL,
    Field      VARCHAR(255) NOT NULL,
    OccurredAt TIMESTAMPTZ  NOT NULL,
    PRIMARY KEY (ObjectType, RecordID, Field)
);
