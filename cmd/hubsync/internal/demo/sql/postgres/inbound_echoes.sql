-- Inbound events caused by this app's own writes (see ../inbound_echoes.sql).
SELECT COUNT(*) FROM _System_IntegrationInbound
WHERE Payload->>'changeSource' IN ('INTEGRATION', 'API')
  AND (Payload->>'sourceId' = $1 OR Payload->>'sourceId' LIKE '%:' || $1);
