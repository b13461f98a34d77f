-- Processed inbound and outbound events: queue, milliseconds from queued to
-- processed, claims, failed attempts. SQLite keeps times as unix microseconds.
-- Inbound events never claimed (echoes, stored processed at receipt) are left
-- out: their 0 says nothing of the SyncWorker (see inbound_at_receipt.sql).
SELECT 'outbound', (ProcessedDate - CreatedDate) / 1000.0, Attempt, RetryCount
FROM _System_IntegrationOutbound WHERE Status = 'processed'
UNION ALL
SELECT 'inbound', (ProcessedDate - CreatedDate) / 1000.0, Attempt, RetryCount
FROM _System_IntegrationInbound WHERE Status = 'processed' AND Attempt > 0;
