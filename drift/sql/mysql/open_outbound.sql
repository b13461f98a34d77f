-- Records among a JSON array of ids with outbound events still on their way
-- (pending or processing): their drift may be a change in flight.
SELECT DISTINCT RecordID FROM _System_IntegrationOutbound
WHERE Destination = ? AND ObjectType = ? AND Status IN ('pending', 'processing')
  AND RecordID IN (
    SELECT j.id FROM JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j
  )
