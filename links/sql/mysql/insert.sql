-- Inserts a link unless the record or the external id has one already
-- (another writer's, committed while this one waited for it): the no-op
-- update leaves that row as it is; the caller then reads what is there
-- (link_check_many) to tell the same link from a conflict.
INSERT INTO hubsync_link (Destination, ObjectType, RecordID, ExternalID, CreatedDate, LastModifiedDate)
VALUES (?, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE RecordID = hubsync_link.RecordID
