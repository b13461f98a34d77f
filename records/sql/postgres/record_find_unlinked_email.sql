SELECT r.Id FROM hubsync_record r
WHERE r.ObjectType = ?
  AND r.Fields ->> 'email' = ?
  AND NOT EXISTS (
    SELECT 1 FROM hubsync_link l
    WHERE l.Destination = ? AND l.ObjectType = r.ObjectType AND l.RecordID = r.Id
  )
ORDER BY r.Id
LIMIT 1
