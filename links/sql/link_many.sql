-- Links many unlinked records at once: the fifth argument is a JSON array of
-- [recordID, externalID] pairs (their external ids checked free beforehand).
-- A pair whose record or external id another writer linked meanwhile is
-- skipped; the caller then reads what is there (link_check_many) to tell the
-- same link from a conflict.
-- WHERE true keeps SQLite from reading ON CONFLICT as a join constraint.
INSERT INTO hubsync_link (Destination, ObjectType, RecordID, ExternalID, CreatedDate, LastModifiedDate)
SELECT ?, ?, json_extract(value, '$[0]'), json_extract(value, '$[1]'), ?, ? FROM json_each(?) WHERE true
ON CONFLICT DO NOTHING
