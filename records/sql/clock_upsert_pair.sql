-- Advances the clocks of two fields of one record, never backwards, in one
-- statement: a source change of one property also advances the record's
-- apply.SeenClock, and two rows of VALUES cost less than clock_upsert_many's
-- JSON list. Parameters: object type, record id, field, time, twice (the two
-- fields not alike).
INSERT INTO hubsync_field_clock (ObjectType, RecordID, Field, OccurredAt)
VALUES (?, ?, ?, ?), (?, ?, ?, ?)
ON CONFLICT (ObjectType, RecordID, Field)
DO UPDATE SET OccurredAt = MAX(hubsync_field_clock.OccurredAt, excluded.OccurredAt)
