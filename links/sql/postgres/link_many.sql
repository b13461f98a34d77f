-- Links many records at once: the fifth argument is a JSON array of
-- [recordID, externalID] pairs (their external ids checked free beforehand).
INSERT INTO hubsync_link (Destination, ObjectType, RecordID, ExternalID, CreatedDate, LastModifiedDate)
SELECT ?, ?, p->>0, p->>1, CAST(? AS timestamptz), CAST(? AS timestamptz) FROM jsonb_array_elements(CAST(? AS jsonb)) AS p
ON CONFLICT (Destination, ObjectType, RecordID)
DO UPDATE SET ExternalID = excluded.ExternalID, LastModifiedDate = excluded.LastModifiedDate
WHERE hubsync_link.ExternalID <> excluded.ExternalID
