-- Parameters: object type, value, destination. The index holds the email's
-- first 191 characters: it finds the candidates, and the whole value decides.
-- The "not linked" check is one probe of hubsync_link's primary key per
-- candidate, whatever the statistics: the first link at or after the
-- candidate's key, kept only if it is the candidate's. A plain NOT EXISTS on
-- a link table without statistics may be planned as a read of every link of
-- the object type through the external-id index, once per candidate.
SELECT r.Id FROM hubsync_record r
WHERE r.ObjectType = $1
  AND left(r.Fields ->> 'email', 191) = left(CAST($2 AS TEXT), 191)
  AND r.Fields ->> 'email' = $2
  AND NOT EXISTS (
    SELECT 1 FROM (
        SELECT Destination, ObjectType, RecordID FROM hubsync_link
        WHERE (Destination, ObjectType, RecordID) >= ($3, r.ObjectType, r.Id)
        ORDER BY Destination, ObjectType, RecordID
        LIMIT 1
    ) AS l
    WHERE l.Destination = $3 AND l.ObjectType = r.ObjectType AND l.RecordID = r.Id
  )
ORDER BY r.Id
LIMIT 1
