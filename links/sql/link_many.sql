-- Links many records at once: the fifth argument is a JSON array of
-- [recordID, externalID] pairs (their external ids checked free beforehand).
-- WHERE true keeps SQLite from reading ON CONFLICT as a join constraint.
INSERT INTO hubsync_link (Destination, ObjectType, RecordID, ExternalID, CreatedDate, LastModifiedDate)
SELECT ?, ?, json_extract(value, '$[0]'), json_extract(value, '$[1]'), ?, ? FROM json_each(?) WHERE true
ON CONFLICT (Destination, ObjectType, RecordID)
DO UPDATE SET ExternalID = excluded.ExternalID, LastModifiedDate = excluded.LastModifiedDate
WHERE hubsync_link.ExternalID <> excluded.ExternalID
