-- The owed fields of many records in one query; the third argument is a JSON
-- array of record ids.
SELECT RecordID, Fields FROM hubsync_owed
WHERE Destination = ? AND ObjectType = ? AND RecordID IN (SELECT value FROM json_each(?))
