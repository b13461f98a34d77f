-- Processed inbound and outbound events: queue, milliseconds from queued to
-- processed, claims, failed attempts; inbound ones the SyncWorker claimed
-- (see ../queue_latency.sql).
SELECT 'outbound', TIMESTAMPDIFF(MICROSECOND, CreatedDate, ProcessedDate) / 1000.0, Attempt, RetryCount
FROM _System_IntegrationOutbound WHERE Status = 'processed'
UNION ALL
SELECT 'inbound', TIMESTAMPDIFF(MICROSECOND, CreatedDate, ProcessedDate) / 1000.0, Attempt, RetryCount
FROM _System_IntegrationInbound WHERE Status = 'processed' AND Attempt > 0;
