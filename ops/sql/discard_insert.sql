INSERT INTO hubsync_discarded_event
    (Id, Direction, EventKey, ObjectType, RecordID, EventType, Attempts, ErrorMessage, Payload, Reason, CreatedDate, DiscardedDate)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
