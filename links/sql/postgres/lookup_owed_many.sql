-- The owed fields of many records in one query; the third argument is a JSON
-- array of record ids. One probe of the primary key per id, as in
-- lookup_many.sql (which says why).
SELECT w.RecordID, w.Fields
FROM (SELECT CAST(? AS text) AS d, CAST(? AS text) AS o) AS k
CROSS JOIN jsonb_array_elements_text(CAST(? AS jsonb)) AS j(id)
CROSS JOIN LATERAL (
    SELECT Destination, ObjectType, RecordID, Fields FROM hubsync_owed
    WHERE (Destination, ObjectType, RecordID) >= (k.d, k.o, j.id)
    ORDER BY Destination, ObjectType, RecordID
    LIMIT 1
) AS w
WHERE w.Destination = k.d AND w.ObjectType = k.o AND w.RecordID = j.id
