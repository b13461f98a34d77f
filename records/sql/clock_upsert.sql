-- A field clock never moves backwards.
INSERT INTO hubsync_field_clock (ObjectType, RecordID, Field, OccurredAt)
VALUES (?, ?, ?, ?)
ON CONFLICT (ObjectType, RecordID, Field)
DO UPDATE SET OccurredAt = MAX(hubsync_field_clock.OccurredAt, excluded.OccurredAt)
