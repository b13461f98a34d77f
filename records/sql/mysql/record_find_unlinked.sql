SELECT r.Id FROM hubsync_record r
WHERE r.ObjectType = ?
  AND JSON_UNQUOTE(JSON_EXTRACT(r.Fields, CONCAT('$."', ?, '"'))) = CAST(? AS CHAR CHARACTER SET utf8mb4) COLLATE utf8mb4_bin
  AND NOT EXISTS (
    SELECT 1 FROM hubsync_link l
    WHERE l.Destination = ? AND l.ObjectType = r.ObjectType AND l.RecordID = r.Id
  )
ORDER BY r.Id
LIMIT 1
