-- How many of a record's outbound events enqueued since its last write are
-- dead letters: the write's own and any resend of that same state. Reads
-- idx_outbound_open's (Destination, ObjectType, RecordID) prefix.
SELECT COUNT(*) FROM _System_IntegrationOutbound
WHERE Destination = ? AND ObjectType = ? AND RecordID = ? AND Status = 'failed' AND CreatedDate >= ?
