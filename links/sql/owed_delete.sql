-- Forgets the fields owed for one record: a write carried them all.
DELETE FROM hubsync_owed
WHERE Destination = ? AND ObjectType = ? AND RecordID = ?
