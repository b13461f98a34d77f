-- Links many unlinked records at once: the fifth argument is a JSON array of
-- [recordID, externalID] pairs (their external ids checked free beforehand).
-- A pair whose record or external id another writer linked meanwhile is
-- skipped (after waiting for that writer to finish); the caller then reads
-- what is there (link_check_many) to tell the same link from a conflict.
INSERT INTO hubsync_link (Destination, ObjectType, RecordID, ExternalID, CreatedDate, LastModifiedDate)
SELECT ?, ?, p->>0, p->>1, CAST(? AS timestamptz), CAST(? AS timestamptz) FROM jsonb_array_elements(CAST(? AS jsonb)) AS p
ON CONFLICT DO NOTHING
