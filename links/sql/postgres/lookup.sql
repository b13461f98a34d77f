-- The link of one record: one probe of the primary key, as lookup_many.sql
-- probes each id (and says why). Without statistics the plain
-- RecordID = $3 read every link of the object type through the external-id
-- index.
SELECT l.ExternalID FROM (
    SELECT Destination, ObjectType, RecordID, ExternalID FROM hubsync_link
    WHERE (Destination, ObjectType, RecordID) >= ($1, $2, $3)
    ORDER BY Destination, ObjectType, RecordID
    LIMIT 1
) AS l
WHERE l.Destination = $1 AND l.ObjectType = $2 AND l.RecordID = $3
