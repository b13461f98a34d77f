-- SQLite runs every write transaction with the write lock held from BEGIN
-- (immediate transactions), so a plain read already waits for a deletion.
SELECT 1 FROM hubsync_record WHERE ObjectType = ? AND Id = ?
