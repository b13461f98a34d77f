-- When a write of a record to a destination was last handed to a worker,
-- or its lease extended, released or failed (recordTx.LinkMade): the latest
-- LastModifiedDate of its events that a worker claimed and that are
-- unfinished or dead-lettered. One range of idx_outbound_record.
-- Parameters: destination, object type, id.
SELECT LastModifiedDate FROM _System_IntegrationOutbound
WHERE Destination = ? AND ObjectType = ? AND RecordID = ? AND Status IN ('pending', 'processing', 'failed') AND Attempt > 0
ORDER BY LastModifiedDate DESC
LIMIT 1
