DELETE FROM hubsync_record
WHERE ObjectType = ? AND Id = ? AND Version = ?
