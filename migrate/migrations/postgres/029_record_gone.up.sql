-- The last version of each deleted record, so that a record brought back
-- under its id (HubSpot restored the object) continues its versions instead
-- of starting again at 1: a client holding a version from before the
-- deletion gets a version conflict, not a write over values it never saw.
CREATE TABLE hubsync_record_gone (
    ObjectType VARCHAR(100) NOT NULL,
    RecordID   VARCHAR(255) NOT NULL,
    Version    BIGINT NOT NULL,
    PRIMARY KEY (ObjectType, RecordID)
);
