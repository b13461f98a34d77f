-- Keeps a merged-away record's email for its survivor; parameters: object
-- type, lower-case email, the survivor's record id.
INSERT INTO hubsync_email_alias (ObjectType, Email, RecordID) VALUES (?, ?, ?)
ON CONFLICT (ObjectType, Email) DO UPDATE SET RecordID = excluded.RecordID
