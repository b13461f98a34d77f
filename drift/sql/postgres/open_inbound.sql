-- External ids among a JSON array with inbound events still to apply
-- (pending or processing): their drift may be a change in flight.
SELECT DISTINCT ExternalID FROM _System_IntegrationInbound
WHERE Source = ? AND ObjectType = ? AND Status IN ('pending', 'processing')
  AND ExternalID = ANY(ARRAY(SELECT jsonb_array_elements_text(CAST(? AS jsonb))))
