-- The fields of many records in one query; the second argument is a JSON
-- array of record ids (SQL has no portable array parameter).
SELECT Id, Fields FROM hubsync_record
WHERE ObjectType = ? AND Id IN (SELECT value FROM json_each(?))
