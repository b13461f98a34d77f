SELECT Field, OccurredAt FROM hubsync_field_clock
WHERE ObjectType = ? AND RecordID = ?
