-- record_gone_get for a transaction that waited for a deletion. InnoDB's
-- REPEATABLE READ reads a plain SELECT from the snapshot taken at the
-- transaction's first plain read, which may predate the deletion it waited
-- for; a locking read reads the latest committed row.
SELECT Version FROM hubsync_record_gone WHERE ObjectType = ? AND RecordID = ?
LOCK IN SHARE MODE
