-- Every field clock of a record except its tombstone.
DELETE FROM hubsync_field_clock
WHERE ObjectType = ? AND RecordID = ? AND Field <> '$deleted'
