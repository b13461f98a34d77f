-- See ../merged_many.sql. The table's columns are utf8mb4_bin, and so is
-- the list.
SELECT ExternalID, SurvivorID, OccurredAt FROM hubsync_tombstone
WHERE Destination = ? AND ObjectType = ? AND Kind = 'merged' AND ExternalID IN (
    SELECT j.id FROM JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j
)
