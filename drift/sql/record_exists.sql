-- Whether a record exists; parameters: type, id.
SELECT COUNT(*) FROM hubsync_record WHERE ObjectType = ? AND Id = ?
