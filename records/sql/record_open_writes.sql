-- The unfinished writes of a record to a destination (recordTx.LinkMade):
-- when each was last handed to a worker, its lease extended, released or
-- retried (LastModifiedDate), and until when a worker holds it. SQLite's
-- write transactions hold the write lock from BEGIN: no claim commits
-- meanwhile. One range of idx_outbound_open. Parameters: destination, object
-- type, id.
SELECT Status, Attempt, LastModifiedDate, LeaseExpiresDate FROM _System_IntegrationOutbound
WHERE Destination = ? AND ObjectType = ? AND RecordID = ? AND Status IN ('pending', 'processing')
