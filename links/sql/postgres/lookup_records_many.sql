-- The owners of many external ids in one query; the third argument is a JSON
-- array of external ids. One probe of the external-id index per id, as
-- lookup_many.sql probes the primary key (and says why): ordered by that
-- index, so that neither the primary key's (Destination, ObjectType) prefix
-- nor a sort can stand in for it.
SELECT l.RecordID, l.ExternalID
FROM jsonb_array_elements_text(CAST($3 AS jsonb)) AS j(id)
CROSS JOIN LATERAL (
    SELECT Destination, ObjectType, RecordID, ExternalID FROM hubsync_link
    WHERE (Destination, ObjectType, ExternalID) >= ($1, $2, j.id)
    ORDER BY Destination, ObjectType, ExternalID
    LIMIT 1
) AS l
WHERE l.Destination = $1 AND l.ObjectType = $2 AND l.ExternalID = j.id
