-- Whether a record has a link to a destination (recordTx.LinkMade), read
-- after the record's row is locked (each statement reads the committed
-- state). One probe of the primary key, as links' lookup.sql: without
-- statistics the plain RecordID = $3 may read every link of the object type
-- through the external-id index. Parameters: destination, object type, id.
SELECT 1 FROM (
    SELECT Destination, ObjectType, RecordID FROM hubsync_link
    WHERE (Destination, ObjectType, RecordID) >= ($1, $2, $3)
    ORDER BY Destination, ObjectType, RecordID
    LIMIT 1
) AS l
WHERE l.Destination = $1 AND l.ObjectType = $2 AND l.RecordID = $3
