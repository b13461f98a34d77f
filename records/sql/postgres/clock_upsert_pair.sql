-- See ../clock_upsert_pair.sql.
INSERT INTO hubsync_field_clock (ObjectType, RecordID, Field, OccurredAt)
VALUES (?, ?, ?, ?), (?, ?, ?, ?)
ON CONFLICT (ObjectType, RecordID, Field)
DO UPDATE SET OccurredAt = GREATEST(hubsync_field_clock.OccurredAt, excluded.OccurredAt)
