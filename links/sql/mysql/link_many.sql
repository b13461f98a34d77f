-- Links many records at once: the fifth argument is a JSON array of
-- [recordID, externalID] pairs (their external ids checked free beforehand).
INSERT INTO hubsync_link (Destination, ObjectType, RecordID, ExternalID, CreatedDate, LastModifiedDate)
SELECT ?, ?, j.rec, j.ext, ?, ? FROM JSON_TABLE(?, '$[*]' COLUMNS (
    rec VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$[0]',
    ext VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$[1]'
)) AS j
ON DUPLICATE KEY UPDATE ExternalID = VALUES(ExternalID), LastModifiedDate = VALUES(LastModifiedDate)
