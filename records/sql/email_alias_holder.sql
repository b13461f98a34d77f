-- The live survivor that holds a merged-away email, other than the writing
-- record; parameters: object type, lower-case email, the writing record's
-- id ("" for a new one). A primary-key probe, then one record by its key.
SELECT a.RecordID FROM hubsync_email_alias a
JOIN hubsync_record r ON r.ObjectType = a.ObjectType AND r.Id = a.RecordID
WHERE a.ObjectType = ? AND a.Email = ? AND a.RecordID <> ?
