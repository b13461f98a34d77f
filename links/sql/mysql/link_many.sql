-- Links many unlinked records at once: the fifth argument is a JSON array of
-- [recordID, externalID] pairs (their external ids checked free beforehand).
-- A pair whose record or external id another writer linked meanwhile is
-- left as that writer linked it (the no-op update); the caller then reads
-- what is there (link_check_many) to tell the same link from a conflict.
INSERT INTO hubsync_link (Destination, ObjectType, RecordID, ExternalID, CreatedDate, LastModifiedDate)
SELECT ?, ?, j.rec, j.ext, ?, ? FROM JSON_TABLE(?, '$[*]' COLUMNS (
    rec VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$[0]',
    ext VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$[1]'
)) AS j
ON DUPLICATE KEY UPDATE RecordID = hubsync_link.RecordID
