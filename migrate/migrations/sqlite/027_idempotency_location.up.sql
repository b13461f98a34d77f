-- A replayed response carries the Location header of the first one (a
-- records API create answers 201 with the new record's path).
ALTER TABLE hubsync_idempotency ADD COLUMN location TEXT NOT NULL DEFAULT '';
