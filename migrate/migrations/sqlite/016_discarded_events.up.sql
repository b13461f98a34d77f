-- Dead letters an operator discarded (the dashboard), each with the reason
-- given, so that "where did this event go?" has an answer. The queue row is
-- deleted in the same transaction. Dates are INTEGER unix microseconds (UTC);
-- Payload is the event's payload as stored.
CREATE TABLE hubsync_discarded_event (
    Id            TEXT    NOT NULL PRIMARY KEY,
    Direction     TEXT    NOT NULL,
    EventKey      TEXT    NOT NULL,
    ObjectType    TEXT    NOT NULL,
    RecordID      TEXT    NOT NULL,
    EventType     TEXT    NOT NULL,
    Attempts      INTEGER NOT NULL,
    ErrorMessage  TEXT    NOT NULL,
    Payload       TEXT    NOT NULL,
    Reason        TEXT    NOT NULL,
    CreatedDate   INTEGER NOT NULL,
    DiscardedDate INTEGER NOT NULL
) STRICT;
CREATE INDEX hubsync_discarded_event_date ON hubsync_discarded_event (DiscardedDate);
