-- Events and failed attempts per queue and status.
SELECT 'inbound', Status, COUNT(*), COALESCE(SUM(RetryCount), 0) FROM _System_IntegrationInbound GROUP BY Status
UNION ALL
SELECT 'outbound', Status, COUNT(*), COALESCE(SUM(RetryCount), 0) FROM _System_IntegrationOutbound GROUP BY Status
UNION ALL
SELECT 'internal', Status, COUNT(*), COALESCE(SUM(RetryCount), 0) FROM _System_OutboxEvent GROUP BY Status;
