-- Dead letters an operator discarded (the dashboard), each with the reason
-- given, so that "where did this event go?" has an answer. The queue row is
-- deleted in the same transaction. Payload is the event's payload as stored.
CREATE TABLE hubsync_discarded_event (
    Id            VARCHAR(64)  NOT NULL PRIMARY KEY,
    Direction     VARCHAR(16)  NOT NULL,
    EventKey      VARCHAR(255) NOT NULL,
    ObjectType    VARCHAR(255) NOT NULL,
    RecordID      VARCHAR(255) NOT NULL,
    EventType     VARCHAR(64)  NOT NULL,
    Attempts      INTEGER      NOT NULL,
    ErrorMessage  TEXT         NOT NULL,
    Payload       TEXT         NOT NULL,
    Reason        TEXT         NOT NULL,
    CreatedDate   TIMESTAMPTZ  NOT NULL,
    DiscardedDate TIMESTAMPTZ  NOT NULL
);
CREATE INDEX hubsync_discarded_event_date ON hubsync_discarded_event (DiscardedDate);
