-- The pushed states of many records in one query; the third argument is a JSON
-- array of record ids. One probe of the primary key per id, as in
-- lookup_many.sql (which says why): the table has no other index, but without
-- statistics the planner read its (Destination, ObjectType) prefix and
-- filtered the ids just the same.
SELECT p.RecordID, p.ExternalID, p.Version, p.Fields, p.Deleted, p.EventDate, p.Seq
FROM jsonb_array_elements_text(CAST($3 AS jsonb)) AS j(id)
CROSS JOIN LATERAL (
    SELECT Destination, ObjectType, RecordID, ExternalID, Version, Fields, Deleted, EventDate, Seq FROM hubsync_pushed
    WHERE (Destination, ObjectType, RecordID) >= ($1, $2, j.id)
    ORDER BY Destination, ObjectType, RecordID
    LIMIT 1
) AS p
WHERE p.Destination = $1 AND p.ObjectType = $2 AND p.RecordID = j.id
