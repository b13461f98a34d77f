-- See ../record_gone_put.sql.
INSERT INTO hubsync_record_gone (ObjectType, RecordID, Version) VALUES (?, ?, ?)
ON DUPLICATE KEY UPDATE Version = VALUES(Version)
