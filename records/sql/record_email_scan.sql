-- Every other record of the object type that has an email, with it; used on
-- SQLite only, whose lower() folds ASCII only, for an email with other
-- letters (rare): the comparison is Go's. Parameters: object type, the
-- writing record's id ("" for a new one). Reads the type's records.
SELECT r.Id, json_extract(r.Fields, '$."email"') FROM hubsync_record r
WHERE r.ObjectType = ? AND r.Id <> ? AND json_type(r.Fields, '$."email"') = 'text'
