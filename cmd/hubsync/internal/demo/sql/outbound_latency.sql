-- Processed outbound events: milliseconds from queued to processed, claims,
-- failed attempts. SQLite keeps times as unix microseconds.
SELECT (ProcessedDate - CreatedDate) / 1000.0, Attempt, RetryCount
FROM _System_IntegrationOutbound WHERE Status = 'processed';
