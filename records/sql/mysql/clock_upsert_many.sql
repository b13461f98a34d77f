-- Advances the clocks of many fields of one record to one time, never
-- backwards, in one statement; the fourth argument is a JSON array of field
-- names (no two alike).
INSERT INTO hubsync_field_clock (ObjectType, RecordID, Field, OccurredAt)
SELECT ?, ?, j.f, ?
FROM JSON_TABLE(?, '$[*]' COLUMNS (
    f VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$' ERROR ON ERROR
)) AS j
ON DUPLICATE KEY UPDATE OccurredAt = GREATEST(OccurredAt, VALUES(OccurredAt))
