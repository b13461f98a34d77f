-- The field clocks of many records of one type; the second argument is a
-- JSON array of record ids.
-- The join starts from the ids and probes each one's clocks by the primary
-- key, as open_outbound does (see there;
-- TestMySQLDriftPlansWithStaleStatistics): as a semi-join, MariaDB with stale
-- statistics read every clock of the object type.
SELECT STRAIGHT_JOIN c.RecordID, c.Field, c.OccurredAt
FROM (SELECT CAST(? AS CHAR CHARACTER SET utf8mb4) COLLATE utf8mb4_bin AS ObjectType) AS k
JOIN JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j
JOIN hubsync_field_clock c FORCE INDEX (PRIMARY)
  ON c.ObjectType = k.ObjectType AND c.RecordID = j.id
