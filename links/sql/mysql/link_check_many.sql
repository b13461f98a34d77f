-- The links of many records as they are now, after a link write: the third
-- argument is a JSON array of record ids. A locking read: under REPEATABLE
-- READ a plain one would see the transaction's snapshot, not the other
-- writers' commits the write waited for.
SELECT RecordID, ExternalID FROM hubsync_link
WHERE Destination = ? AND ObjectType = ? AND RecordID IN (
    SELECT j.id FROM JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j
)
FOR UPDATE
