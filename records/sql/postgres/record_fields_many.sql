-- The fields of many records in one query; the second argument is a JSON
-- array of record ids. Each id is one probe of the primary key, whatever the
-- planner's statistics (as links' lookup_many: a plain Id = ANY(...) leaves
-- the planner the choice, without statistics, to read every record of the
-- type): the first row in key order at or after (ObjectType, id), kept when
-- it is that id.
SELECT r.Id, r.Fields
FROM jsonb_array_elements_text(CAST($2 AS jsonb)) AS j(id)
CROSS JOIN LATERAL (
    SELECT ObjectType, Id, Fields FROM hubsync_record
    WHERE (ObjectType, Id) >= ($1, j.id)
    ORDER BY ObjectType, Id
    LIMIT 1
) AS r
WHERE r.ObjectType = $1 AND r.Id = j.id
