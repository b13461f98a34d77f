-- The links of many records in one query; the third argument is a JSON array
-- of record ids. The table's columns are utf8mb4_bin, and so is the list.
SELECT RecordID, ExternalID FROM hubsync_link
WHERE Destination = ? AND ObjectType = ? AND RecordID IN (
    SELECT j.id FROM JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j
)
