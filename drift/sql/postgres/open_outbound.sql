-- Records among a JSON array of ids with outbound events still on their way
-- (pending or processing): their drift may be a change in flight.
SELECT DISTINCT RecordID FROM _System_IntegrationOutbound
WHERE Destination = ? AND ObjectType = ? AND Status IN ('pending', 'processing')
  AND RecordID = ANY(ARRAY(SELECT jsonb_array_elements_text(CAST(? AS jsonb))))
