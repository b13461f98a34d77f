-- Dead letters an operator discarded (the dashboard), each with the reason
-- given, so that "where did this event go?" has an answer. The queue row is
-- deleted in the same transaction. Dates are DATETIME(6) in UTC; Payload is
-- the event's payload as stored.
CREATE TABLE hubsync_discarded_event (
    Id            VARCHAR(64)  NOT NULL PRIMARY KEY,
    Direction     VARCHAR(16)  NOT NULL,
    EventKey      VARCHAR(255) NOT NULL,
    ObjectType    VARCHAR(255) NOT NULL,
    RecordID      VARCHAR(255) NOT NULL,
    EventType     VARCHAR(64)  NOT NULL,
    Attempts      INT          NOT NULL,
    ErrorMessage  TEXT         NOT NULL,
    Payload       MEDIUMTEXT   NOT NULL,
    Reason        TEXT         NOT NULL,
    CreatedDate   DATETIME(6)  NOT NULL,
    DiscardedDate DATETIME(6)  NOT NULL,
    KEY hubsync_discarded_event_date (DiscardedDate)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
