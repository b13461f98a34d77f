-- record_gone_get for a transaction that waited for a deletion: reads the
-- latest committed version (each statement has its own snapshot here).
SELECT Version FROM hubsync_record_gone WHERE ObjectType = ? AND RecordID = ?
