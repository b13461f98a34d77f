-- Processed inbound and outbound events: queue, milliseconds from queued to
-- processed, claims, failed attempts; inbound ones the SyncWorker claimed
-- (see ../queue_latency.sql).
SELECT 'outbound', EXTRACT(EPOCH FROM (ProcessedDate - CreatedDate))::float8 * 1000, Attempt, RetryCount
FROM _System_IntegrationOutbound WHERE Status = 'processed'
UNION ALL
SELECT 'inbound', EXTRACT(EPOCH FROM (ProcessedDate - CreatedDate))::float8 * 1000, Attempt, RetryCount
FROM _System_IntegrationInbound WHERE Status = 'processed' AND Attempt > 0;
