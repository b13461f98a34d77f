-- One record's latest inbound events (index idx_inbound_external). The index
-- is forced: with the statistics of a table that filled up faster than InnoDB
-- recomputes them, MariaDB read the events of the whole object type newest
-- first through idx_inbound_source, looking for the record's
-- (TestRecordInboundPlanWithStaleStatistics).
SELECT Id, EventType, Status, Attempt, RetryCount, COALESCE(ErrorMessage, ''), Payload, CreatedDate, ProcessedDate
FROM _System_IntegrationInbound FORCE INDEX (idx_inbound_external)
WHERE Source = ? AND ExternalID = ? AND ObjectType = ?
ORDER BY CreatedDate DESC, Id DESC
LIMIT ?
