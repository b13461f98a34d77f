-- Any record of the object type whose field (a plain name, checked by the
-- caller) equals the value, linked or not; parameters: type, field, value.
SELECT r.Id FROM hubsync_record r
WHERE r.ObjectType = ?
  AND json_extract(r.Fields, '$."' || ? || '"') = ?
LIMIT 1
