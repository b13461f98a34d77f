-- Processed outbound events: milliseconds from queued to processed, claims,
-- failed attempts.
SELECT EXTRACT(EPOCH FROM (ProcessedDate - CreatedDate))::float8 * 1000, Attempt, RetryCount
FROM _System_IntegrationOutbound WHERE Status = 'processed';
