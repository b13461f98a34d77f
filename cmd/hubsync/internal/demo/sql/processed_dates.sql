-- When each processed event of the three queues was processed.
SELECT 'outbound', Id, ProcessedDate FROM _System_IntegrationOutbound WHERE Status = 'processed'
UNION ALL
SELECT 'inbound', Id, ProcessedDate FROM _System_IntegrationInbound WHERE Status = 'processed'
UNION ALL
SELECT 'internal', Id, ProcessedDate FROM _System_OutboxEvent WHERE Status = 'processed';
