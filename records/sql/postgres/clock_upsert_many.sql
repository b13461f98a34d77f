-- Advances the clocks of many fields of one record to one time, never
-- backwards, in one statement; the fourth argument is a JSON array of field
-- names (no two alike: a row may be updated once per statement).
INSERT INTO hubsync_field_clock (ObjectType, RecordID, Field, OccurredAt)
SELECT ?, ?, f, CAST(? AS timestamptz) FROM jsonb_array_elements_text(CAST(? AS jsonb)) AS f
ON CONFLICT (ObjectType, RecordID, Field)
DO UPDATE SET OccurredAt = GREATEST(hubsync_field_clock.OccurredAt, excluded.OccurredAt)
