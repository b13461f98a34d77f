-- The unfinished writes of a record to a destination (recordTx.LinkMade):
-- when each was last handed to a worker, its lease extended, released or
-- retried (LastModifiedDate), and until when a worker holds it. Locked, so
-- that no claim of them commits before this transaction does (claims skip
-- locked rows), and read as they are now. One range of idx_outbound_open.
-- Parameters: destination, object type, id.
SELECT Status, Attempt, LastModifiedDate, LeaseExpiresDate FROM _System_IntegrationOutbound
WHERE Destination = ? AND ObjectType = ? AND RecordID = ? AND Status IN ('pending', 'processing')
FOR UPDATE
