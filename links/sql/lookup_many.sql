-- The links of many records in one query; the third argument is a JSON array
-- of record ids (SQL has no portable array parameter).
SELECT RecordID, ExternalID FROM hubsync_link
WHERE Destination = ? AND ObjectType = ? AND RecordID IN (SELECT value FROM json_each(?))
