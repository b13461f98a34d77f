-- The links of many records as they are now, after a link write: the third
-- argument is a JSON array of record ids. SQLite has one writer, so its
-- transaction has seen every commit.
SELECT RecordID, ExternalID FROM hubsync_link
WHERE Destination = ? AND ObjectType = ? AND RecordID IN (SELECT value FROM json_each(?))
