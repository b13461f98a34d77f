-- The fields of many records in one query; the second argument is a JSON
-- array of record ids, compared as the table's utf8mb4_bin column.
SELECT Id, Fields FROM hubsync_record
WHERE ObjectType = ? AND Id IN (
    SELECT j.id FROM JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j
)
