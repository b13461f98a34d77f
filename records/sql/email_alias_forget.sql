-- Forgets the merged-away emails a record holds (its privacy deletion);
-- parameters: object type, record id.
DELETE FROM hubsync_email_alias WHERE ObjectType = ? AND RecordID = ?
