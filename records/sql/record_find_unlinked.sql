-- An unlinked record of the object type whose field (a plain name, checked by the
-- caller) equals the value; parameters: object type, field, value, destination.
SELECT r.Id FROM hubsync_record r
WHERE r.ObjectType = ?
  AND json_extract(r.Fields, '$."' || ? || '"') = ?
  AND NOT EXISTS (
    SELECT 1 FROM hubsync_link l
    WHERE l.Destination = ? AND l.ObjectType = r.ObjectType AND l.RecordID = r.Id
  )
ORDER BY r.Id
LIMIT 1
