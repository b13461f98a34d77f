-- Inbound events caused by this app's own writes (HubSpot echoes): changeSource
-- INTEGRATION or API with sourceId naming the app (bare or "app:ID").
SELECT COUNT(*) FROM _System_IntegrationInbound
WHERE json_extract(Payload, '$.changeSource') IN ('INTEGRATION', 'API')
  AND (json_extract(Payload, '$.sourceId') = ?1 OR json_extract(Payload, '$.sourceId') LIKE '%:' || ?1);
