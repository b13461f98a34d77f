-- The first unlinked record of the object type whose field holds the value.
-- It reads every record of the object type (no index covers an arbitrary
-- field); each candidate's link is probed by its primary key (a LEFT JOIN),
-- as in record_find_unlinked_email.sql: MariaDB turns NOT EXISTS into a
-- materialized subquery that reads every link of the destination.
-- Parameters: destination, object type, field, value.
SELECT r.Id FROM hubsync_record r
LEFT JOIN hubsync_link l ON l.Destination = ? AND l.ObjectType = r.ObjectType AND l.RecordID = r.Id
WHERE r.ObjectType = ?
  AND JSON_UNQUOTE(JSON_EXTRACT(r.Fields, CONCAT('$."', ?, '"'))) = CAST(? AS CHAR CHARACTER SET utf8mb4) COLLATE utf8mb4_bin
  AND l.RecordID IS NULL
ORDER BY r.Id
LIMIT 1
