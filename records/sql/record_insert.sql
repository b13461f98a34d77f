INSERT INTO hubsync_record (ObjectType, Id, Fields, Version, CreatedDate, LastModifiedDate)
VALUES (?, ?, ?, ?, ?, ?)
