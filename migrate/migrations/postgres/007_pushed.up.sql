-- The last state of each local record that a destination accepted: the
-- outbound worker diffs the next write against it (so a later success carries
-- the changes of an earlier dead letter) and completes, without a call, an
-- event older than it (a re-queued dead letter must not regress the
-- destination). ExternalID is the object the state was written to; a state
-- whose ExternalID is not the record's current link is stale and ignored
-- (re-link after a merge, unlink after a 404). Deleted marks an archive: the
-- record is gone there, and events created up to EventDate are superseded.
CREATE TABLE hubsync_pushed (
    Destination      VARCHAR(50)  NOT NULL,
    ObjectType       VARCHAR(100) NOT NULL,
    RecordID         VARCHAR(255) NOT NULL,
    ExternalID       VARCHAR(255) NOT NULL,
    Version          BIGINT       NOT NULL,
    Fields           JSONB,
    Deleted          BOOLEAN      NOT NULL,
    EventDate        TIMESTAMPTZ  NOT NULL,
    LastModifiedDate TIMESTAMPTZ  NOT NULL,
    PRIMARY KEY (Destination, ObjectType, RecordID)
);
