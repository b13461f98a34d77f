INSERT INTO hubsync_link (Destination, ObjectType, RecordID, ExternalID, CreatedDate, LastModifiedDate)
VALUES (?, ?, ?, ?, ?, ?)
