-- The field clocks of many records of one type; the second argument is a
-- JSON array of record ids.
SELECT RecordID, Field, OccurredAt FROM hubsync_field_clock
WHERE ObjectType = ? AND RecordID IN (
    SELECT j.id FROM JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j
)
