-- The first unlinked record of the object type whose field holds the value;
-- parameters: object type, field, value, destination. It reads every record
-- of the object type (no index covers an arbitrary field); each candidate's
-- link is probed by its primary key, as in record_find_unlinked_email.sql
-- (which says why).
SELECT r.Id FROM hubsync_record r
WHERE r.ObjectType = $1
  AND r.Fields ->> CAST($2 AS TEXT) = $3
  AND NOT EXISTS (
    SELECT 1 FROM (
        SELECT Destination, ObjectType, RecordID FROM hubsync_link
        WHERE (Destination, ObjectType, RecordID) >= ($4, r.ObjectType, r.Id)
        ORDER BY Destination, ObjectType, RecordID
        LIMIT 1
    ) AS l
    WHERE l.Destination = $4 AND l.ObjectType = r.ObjectType AND l.RecordID = r.Id
  )
ORDER BY r.Id
LIMIT 1
