-- The owners of many external ids in one query; the third argument is a JSON
-- array of external ids.
SELECT RecordID, ExternalID FROM hubsync_link
WHERE Destination = ? AND ObjectType = ? AND ExternalID IN (SELECT value FROM json_each(?))
