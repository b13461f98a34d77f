-- Any record of the object type whose field (a plain name, checked by the
-- caller) equals the value, linked or not; parameters: type, field, value.
SELECT r.Id FROM hubsync_record r
WHERE r.ObjectType = ?
  AND JSON_UNQUOTE(JSON_EXTRACT(r.Fields, CONCAT('$."', ?, '"'))) = CAST(? AS CHAR CHARACTER SET utf8mb4) COLLATE utf8mb4_bin
LIMIT 1
