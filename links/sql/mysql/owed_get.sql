-- The fields owed for one record (a JSON array of local field names); a
-- locking read, so concurrent merges of the list do not lose a field.
SELECT Fields FROM hubsync_owed
WHERE Destination = ? AND ObjectType = ? AND RecordID = ?
FOR UPDATE
