-- SQLite runs every write transaction with the write lock held from BEGIN
-- (immediate transactions), so a plain read is already exclusive.
SELECT Id, Version, Fields, CreatedDate, LastModifiedDate FROM hubsync_record
WHERE ObjectType = ? AND Id = ?
