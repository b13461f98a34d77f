-- External ids among a JSON array with inbound events still to apply
-- (pending or processing): their drift may be a change in flight.
-- The join starts from the ids and probes each one's record key in
-- idx_inbound_open, as open_outbound does (see there;
-- TestMySQLDriftPlansWithStaleStatistics).
SELECT STRAIGHT_JOIN DISTINCT i.ExternalID
FROM (SELECT CAST(? AS CHAR CHARACTER SET utf8mb4) COLLATE utf8mb4_bin AS Source,
             CAST(? AS CHAR CHARACTER SET utf8mb4) COLLATE utf8mb4_bin AS ObjectType) AS k
JOIN JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j
JOIN _System_IntegrationInbound i FORCE INDEX (idx_inbound_open)
  ON i.Source = k.Source AND i.ObjectType = k.ObjectType AND i.ExternalID = j.id
WHERE i.Status IN ('pending', 'processing')
