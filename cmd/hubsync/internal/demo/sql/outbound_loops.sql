-- Outbound events to a destination whose snapshot says the change came from
-- that same destination's sync: changes that would go back where they came
-- from (anti-loop layers 1 and 2 must keep this at 0).
SELECT COUNT(*) FROM _System_IntegrationOutbound
WHERE json_extract(Payload, '$.metadata.sync_source') = Destination;
