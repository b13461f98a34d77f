-- Emails match whatever their case (HubSpot keeps them in lower case). The
-- generated column holds the lower-cased email's first 191 characters
-- (migration 028): it finds the candidates by index, and the whole value
-- decides. The link is probed per
-- candidate by its primary key (a LEFT JOIN): MariaDB turns NOT EXISTS into a
-- materialized subquery that reads every link of the destination.
-- Parameters: destination, object type, value, value.
SELECT r.Id FROM hubsync_record r FORCE INDEX (idx_hubsync_record_email)
LEFT JOIN hubsync_link l ON l.Destination = ? AND l.ObjectType = r.ObjectType AND l.RecordID = r.Id
WHERE r.ObjectType = ?
  AND r.MatchEmail = LOWER(LEFT(CAST(? AS CHAR CHARACTER SET utf8mb4), 191)) COLLATE utf8mb4_bin
  AND LOWER(JSON_UNQUOTE(JSON_EXTRACT(r.Fields, '$."email"'))) = LOWER(CAST(? AS CHAR CHARACTER SET utf8mb4)) COLLATE utf8mb4_bin
  AND l.RecordID IS NULL
ORDER BY r.Id
LIMIT 1
