-- The version a record was last deleted at; parameters: object type, id.
SELECT Version FROM hubsync_record_gone WHERE ObjectType = ? AND RecordID = ?
