-- The record of the object type with this id, when it is linked to nothing on
-- the destination (mapping.RecordIDField); parameters: object type, id,
-- destination. The link is probed by its primary key, as in
-- record_find_unlinked_email.sql (which says why).
SELECT r.Id FROM hubsync_record r
WHERE r.ObjectType = $1
  AND r.Id = $2
  AND NOT EXISTS (
    SELECT 1 FROM (
        SELECT Destination, ObjectType, RecordID FROM hubsync_link
        WHERE (Destination, ObjectType, RecordID) >= ($3, r.ObjectType, r.Id)
        ORDER BY Destination, ObjectType, RecordID
        LIMIT 1
    ) AS l
    WHERE l.Destination = $3 AND l.ObjectType = r.ObjectType AND l.RecordID = r.Id
  )
