-- Events whose lease one process holds (LeaseOwner "host/pid/component-random",
-- matched by its "host/pid/" prefix), read just after the chaos run SIGKILLed
-- it: the work its kill leaves waiting for a lease to expire, and when.
SELECT 'outbound', Id, LeaseExpiresDate FROM _System_IntegrationOutbound WHERE Status = 'processing' AND LeaseOwner LIKE ?
UNION ALL
SELECT 'inbound', Id, LeaseExpiresDate FROM _System_IntegrationInbound WHERE Status = 'processing' AND LeaseOwner LIKE ?
UNION ALL
SELECT 'internal', Id, LeaseExpiresDate FROM _System_OutboxEvent WHERE Status = 'processing' AND LeaseOwner LIKE ?;
