-- Outbound events whose snapshot came from the destination's own sync (see ../outbound_loops.sql).
SELECT COUNT(*) FROM _System_IntegrationOutbound
WHERE JSON_UNQUOTE(JSON_EXTRACT(Payload, '$.metadata.sync_source')) = Destination;
