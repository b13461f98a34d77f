-- The fields owed for one record (a JSON array of local field names). SQLite
-- write transactions hold the write lock from BEGIN, so a plain read is
-- already current.
SELECT Fields FROM hubsync_owed
WHERE Destination = ? AND ObjectType = ? AND RecordID = ?
