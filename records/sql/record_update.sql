-- Optimistic concurrency: the row changes only at the version the caller read.
UPDATE hubsync_record SET Fields = ?, Version = ?, LastModifiedDate = ?
WHERE ObjectType = ? AND Id = ? AND Version = ?
