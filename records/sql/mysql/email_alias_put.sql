-- See ../email_alias_put.sql.
INSERT INTO hubsync_email_alias (ObjectType, Email, RecordID) VALUES (?, ?, ?)
ON DUPLICATE KEY UPDATE RecordID = VALUES(RecordID)
