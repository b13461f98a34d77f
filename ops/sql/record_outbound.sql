-- One record's latest outbound events (index idx_outbound_record).
SELECT Id, EventType, Status, Attempt, RetryCount, COALESCE(ErrorMessage, ''), Payload, CreatedDate, ProcessedDate
FROM _System_IntegrationOutbound
WHERE ObjectType = ? AND RecordID = ? AND Destination = ?
ORDER BY CreatedDate DESC, Id DESC
LIMIT ?
