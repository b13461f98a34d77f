-- A locking read: under REPEATABLE READ a plain read would see the snapshot taken
-- before the record row was locked, and miss clocks a writer just committed.
SELECT Field, OccurredAt FROM hubsync_field_clock
WHERE ObjectType = ? AND RecordID = ?
FOR UPDATE
