-- Advances the clocks of many fields of one record to one time, never
-- backwards, in one statement; the fourth argument is a JSON array of field
-- names (no two alike).
-- WHERE true keeps SQLite from reading ON CONFLICT as a join constraint.
INSERT INTO hubsync_field_clock (ObjectType, RecordID, Field, OccurredAt)
SELECT ?, ?, value, ? FROM json_each(?) WHERE true
ON CONFLICT (ObjectType, RecordID, Field)
DO UPDATE SET OccurredAt = MAX(hubsync_field_clock.OccurredAt, excluded.OccurredAt)
