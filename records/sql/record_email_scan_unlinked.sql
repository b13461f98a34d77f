-- Every unlinked record of the object type that has an email, with it, in
-- Id order; used on SQLite only, whose lower() folds ASCII only, for an
-- email with other letters (rare): the comparison is Go's. Parameters:
-- object type, destination. Reads the type's records.
SELECT r.Id, json_extract(r.Fields, '$."email"') FROM hubsync_record r
WHERE r.ObjectType = ? AND json_type(r.Fields, '$."email"') = 'text'
  AND NOT EXISTS (
    SELECT 1 FROM hubsync_link l
    WHERE l.Destination = ? AND l.ObjectType = r.ObjectType AND l.RecordID = r.Id
  )
ORDER BY r.Id
