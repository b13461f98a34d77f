-- See ../clock_upsert_pair.sql.
INSERT INTO hubsync_field_clock (ObjectType, RecordID, Field, OccurredAt)
VALUES (?, ?, ?, ?), (?, ?, ?, ?)
ON DUPLICATE KEY UPDATE OccurredAt = GREATEST(OccurredAt, VALUES(OccurredAt))
