-- Records among a JSON array of ids with outbound events still on their way
-- (pending or processing): their drift may be a change in flight.
-- The join starts from the ids and probes each one's record key in
-- idx_outbound_open (STRAIGHT_JOIN, FORCE INDEX): as a semi-join, MariaDB with
-- the statistics of a table that filled up faster than InnoDB recomputes them
-- read every event of the object type through (Destination, ObjectType) and
-- looked each up in the ids (TestMySQLDriftPlansWithStaleStatistics). The
-- first derived table keeps the parameters in the order of the other dialects'
-- query.
SELECT STRAIGHT_JOIN DISTINCT o.RecordID
FROM (SELECT CAST(? AS CHAR CHARACTER SET utf8mb4) COLLATE utf8mb4_bin AS Destination,
             CAST(? AS CHAR CHARACTER SET utf8mb4) COLLATE utf8mb4_bin AS ObjectType) AS k
JOIN JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j
JOIN _System_IntegrationOutbound o FORCE INDEX (idx_outbound_open)
  ON o.Destination = k.Destination AND o.ObjectType = k.ObjectType AND o.RecordID = j.id
WHERE o.Status IN ('pending', 'processing')
