-- See ../record_find_email_holder.sql. MatchEmail (migration 028) holds the
-- lower-cased email's first 191 characters: it finds the candidates, and the
-- whole value decides. Parameters: object type, value, value, id.
SELECT r.Id FROM hubsync_record r
WHERE r.ObjectType = ?
  AND r.MatchEmail = LOWER(LEFT(CAST(? AS CHAR CHARACTER SET utf8mb4), 191)) COLLATE utf8mb4_bin
  AND LOWER(JSON_UNQUOTE(JSON_EXTRACT(r.Fields, '$."email"'))) = LOWER(CAST(? AS CHAR CHARACTER SET utf8mb4)) COLLATE utf8mb4_bin
  AND r.Id <> ?
LIMIT 1
