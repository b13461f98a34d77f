-- Fields a destination is owed for a local record: the local field names
-- changed by events the outbound worker dead-lettered (failed permanently or
-- out of attempts) and that no write has carried since. The outbound worker
-- sends only the fields the claimed events themselves changed, so without
-- this list a dead letter's change would never reach the destination; the
-- record's next successful write carries them (latest values) and clears
-- them. Fields is a JSON array of field names.
CREATE TABLE hubsync_owed (
    Destination      TEXT    NOT NULL,
    ObjectType       TEXT    NOT NULL,
    RecordID         TEXT    NOT NULL,
    Fields           TEXT    NOT NULL,
    LastModifiedDate INTEGER NOT NULL,
    PRIMARY KEY (Destination, ObjectType, RecordID)
) STRICT;
