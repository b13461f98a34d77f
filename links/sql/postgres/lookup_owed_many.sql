-- The owed fields of many records in one query; the third argument is a JSON
-- array of record ids. One probe of the primary key per id, as in
-- lookup_many.sql (which says why).
SELECT w.RecordID, w.Fields
FROM jsonb_array_elements_text(CAST($3 AS jsonb)) AS j(id)
CROSS JOIN LATERAL (
    SELECT Destination, ObjectType, RecordID, Fields FROM hubsync_owed
    WHERE (Destination, ObjectType, RecordID) >= ($1, $2, j.id)
    ORDER BY Destination, ObjectType, RecordID
    LIMIT 1
) AS w
WHERE w.Destination = $1 AND w.ObjectType = $2 AND w.RecordID = j.id
