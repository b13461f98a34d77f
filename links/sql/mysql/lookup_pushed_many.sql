-- The pushed states of many records in one query; the third argument is a JSON
-- array of record ids.
SELECT RecordID, ExternalID, Version, Fields, Deleted, EventDate, Seq FROM hubsync_pushed
WHERE Destination = ? AND ObjectType = ? AND RecordID IN (
    SELECT j.id FROM JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j
)
