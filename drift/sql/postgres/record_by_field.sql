-- Any record of the object type whose field (a plain name, checked by the
-- caller) equals the value, linked or not; parameters: type, field, value.
SELECT r.Id FROM hubsync_record r
WHERE r.ObjectType = ?
  AND r.Fields ->> CAST(? AS TEXT) = ?
LIMIT 1
