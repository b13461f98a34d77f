-- The record that holds a merged-away email, live or not; parameters: object
-- type, lower-case email. A primary-key probe.
SELECT RecordID FROM hubsync_email_alias WHERE ObjectType = ? AND Email = ?
