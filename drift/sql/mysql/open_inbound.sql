-- External ids among a JSON array with inbound events still to apply
-- (pending or processing): their drift may be a change in flight.
SELECT DISTINCT ExternalID FROM _System_IntegrationInbound
WHERE Source = ? AND ObjectType = ? AND Status IN ('pending', 'processing')
  AND ExternalID IN (
    SELECT j.id FROM JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j
  )
