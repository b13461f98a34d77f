-- The links of many records as they are now, after a link write: the third
-- argument is a JSON array of record ids. Under READ COMMITTED a new
-- statement sees the other writers' commits the write waited for. One probe
-- of the primary key per id, as in lookup_many.sql (which says why).
SELECT l.RecordID, l.ExternalID
FROM jsonb_array_elements_text(CAST($3 AS jsonb)) AS j(id)
CROSS JOIN LATERAL (
    SELECT Destination, ObjectType, RecordID, ExternalID FROM hubsync_link
    WHERE (Destination, ObjectType, RecordID) >= ($1, $2, j.id)
    ORDER BY Destination, ObjectType, RecordID
    LIMIT 1
) AS l
WHERE l.Destination = $1 AND l.ObjectType = $2 AND l.RecordID = j.id
