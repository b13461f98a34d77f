-- The pushed states of many records in one query; the third argument is a JSON
-- array of record ids.
SELECT RecordID, ExternalID, Version, Fields, Deleted, EventDate, Seq FROM hubsync_pushed
WHERE Destination = ? AND ObjectType = ? AND RecordID IN (SELECT value FROM json_each(?))
