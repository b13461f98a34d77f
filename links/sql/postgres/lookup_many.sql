-- The links of many records in one query; the third argument is a JSON array
-- of record ids.
-- Each id is one probe of the primary key, whatever the planner's statistics:
-- the first row in key order at or after (Destination, ObjectType, id), kept
-- when it is that id. The plain forms (RecordID = ANY(...), or a join on the
-- three columns) leave the planner a choice it makes on estimates: without
-- statistics it takes Destination = ? AND ObjectType = ? for about one row,
-- so reading that prefix of either index and filtering the ids looks as cheap
-- as probing each id, and it read every row of the object type (20,000 rows
-- for 100 ids). Here only the primary key gives the order the LIMIT 1 wants:
-- any other plan must read and sort every row the row comparison leaves
-- before it returns the first, and without statistics the planner takes a
-- row comparison for a third of the table (plan_test.go holds the plan to
-- this with no statistics, stale ones and fresh ones).
SELECT l.RecordID, l.ExternalID
FROM jsonb_array_elements_text(CAST($3 AS jsonb)) AS j(id)
CROSS JOIN LATERAL (
    SELECT Destination, ObjectType, RecordID, ExternalID FROM hubsync_link
    WHERE (Destination, ObjectType, RecordID) >= ($1, $2, j.id)
    ORDER BY Destination, ObjectType, RecordID
    LIMIT 1
) AS l
WHERE l.Destination = $1 AND l.ObjectType = $2 AND l.RecordID = j.id
