-- Processed outbound events: milliseconds from queued to processed, claims,
-- failed attempts.
SELECT TIMESTAMPDIFF(MICROSECOND, CreatedDate, ProcessedDate) / 1000.0, Attempt, RetryCount
FROM _System_IntegrationOutbound WHERE Status = 'processed';
