-- The field clocks of many records of one type; the second argument is a
-- JSON array of record ids.
SELECT RecordID, Field, OccurredAt FROM hubsync_field_clock
WHERE ObjectType = ? AND RecordID IN (SELECT value FROM json_each(?))
