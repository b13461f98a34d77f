-- The last state of each local record that a destination accepted: the
-- outbound worker diffs the next write against it (so a later success carries
-- the changes of an earlier dead letter) and completes, without a call, an
-- event older than it (a re-queued dead letter must not regress the
-- destination). ExternalID is the object the state was written to; a state
-- whose ExternalID is not the record's current link is stale and ignored
-- (re-link after a merge, unlink after a 404). Deleted marks an archive: the
-- record is gone there, and events created up to EventDate are superseded.
CREATE TABLE hubsync_pushed (
    Destination      TEXT    NOT NULL,
    ObjectType       TEXT    NOT NULL,
    RecordID         TEXT    NOT NULL,
    ExternalID       TEXT    NOT NULL,
    Version          INTEGER NOT NULL,
    Fields           TEXT,
    Deleted          INTEGER NOT NULL,
    EventDate        INTEGER NOT NULL,
    LastModifiedDate INTEGER NOT NULL,
    PRIMARY KEY (Destination, ObjectType, RecordID)
) STRICT;
