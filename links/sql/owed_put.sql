-- Replaces the fields owed for one record (a JSON array of local field names).
INSERT INTO hubsync_owed (Destination, ObjectType, RecordID, Fields, LastModifiedDate)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (Destination, ObjectType, RecordID)
DO UPDATE SET Fields = excluded.Fields, LastModifiedDate = excluded.LastModifiedDate
