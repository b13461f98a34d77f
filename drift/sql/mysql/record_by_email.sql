-- See ../record_by_email.sql. Parameters: type, value, value.
SELECT r.Id FROM hubsync_record r
WHERE r.ObjectType = ?
  AND r.MatchEmail = LOWER(LEFT(CAST(? AS CHAR CHARACTER SET utf8mb4), 191)) COLLATE utf8mb4_bin
  AND LOWER(JSON_UNQUOTE(JSON_EXTRACT(r.Fields, '$."email"'))) = LOWER(CAST(? AS CHAR CHARACTER SET utf8mb4)) COLLATE utf8mb4_bin
LIMIT 1
