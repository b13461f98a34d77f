-- The record linked to one external id: one probe of the external-id index,
-- as lookup_records_many.sql probes each id.
SELECT l.RecordID FROM (
    SELECT Destination, ObjectType, RecordID, ExternalID FROM hubsync_link
    WHERE (Destination, ObjectType, ExternalID) >= ($1, $2, $3)
    ORDER BY Destination, ObjectType, ExternalID
    LIMIT 1
) AS l
WHERE l.Destination = $1 AND l.ObjectType = $2 AND l.ExternalID = $3
