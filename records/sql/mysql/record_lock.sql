-- Waits for a deletion of the row in flight, and then finds no row.
SELECT 1 FROM hubsync_record WHERE ObjectType = ? AND Id = ?
FOR UPDATE
