-- Inbound events caused by this app's own writes (see ../inbound_echoes.sql).
SELECT COUNT(*) FROM _System_IntegrationInbound, (SELECT ? AS app) p
WHERE JSON_UNQUOTE(JSON_EXTRACT(Payload, '$.changeSource')) IN ('INTEGRATION', 'API')
  AND (JSON_UNQUOTE(JSON_EXTRACT(Payload, '$.sourceId')) = p.app
       OR JSON_UNQUOTE(JSON_EXTRACT(Payload, '$.sourceId')) LIKE CONCAT('%:', p.app));
