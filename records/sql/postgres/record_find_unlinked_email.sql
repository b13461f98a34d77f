-- Parameters: object type, value, destination, value (the index's prefix
-- first, then the whole value).
SELECT r.Id FROM hubsync_record r
WHERE r.ObjectType = ?
  AND left(r.Fields ->> 'email', 191) = left(CAST(? AS TEXT), 191)
  AND NOT EXISTS (
    SELECT 1 FROM hubsync_link l
    WHERE l.Destination = ? AND l.ObjectType = r.ObjectType AND l.RecordID = r.Id
  )
  AND r.Fields ->> 'email' = ?
ORDER BY r.Id
LIMIT 1
