-- One record's latest inbound events (index idx_inbound_external).
SELECT Id, EventType, Status, Attempt, RetryCount, COALESCE(ErrorMessage, ''), Payload, CreatedDate, ProcessedDate
FROM _System_IntegrationInbound
WHERE Source = ? AND ExternalID = ? AND ObjectType = ?
ORDER BY CreatedDate DESC, Id DESC
LIMIT ?
