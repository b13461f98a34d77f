-- Newest first.
SELECT Id, Direction, EventKey, ObjectType, RecordID, EventType, Attempts, ErrorMessage, Payload, Reason, CreatedDate, DiscardedDate
FROM hubsync_discarded_event
ORDER BY DiscardedDate DESC, Id DESC
LIMIT ?
