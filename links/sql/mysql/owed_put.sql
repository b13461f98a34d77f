-- Replaces the fields owed for one record (a JSON array of local field names).
INSERT INTO hubsync_owed (Destination, ObjectType, RecordID, Fields, LastModifiedDate)
VALUES (?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE Fields = VALUES(Fields), LastModifiedDate = VALUES(LastModifiedDate)
