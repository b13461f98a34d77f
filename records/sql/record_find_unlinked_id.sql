-- The record of the object type with this id, when it is linked to nothing on the
-- destination: the match for an IDProperty that holds the local record id
-- (mapping.RecordIDField); parameters: object type, id, destination.
SELECT r.Id FROM hubsync_record r
WHERE r.ObjectType = ?
  AND r.Id = ?
  AND NOT EXISTS (
    SELECT 1 FROM hubsync_link l
    WHERE l.Destination = ? AND l.ObjectType = r.ObjectType AND l.RecordID = r.Id
  )
