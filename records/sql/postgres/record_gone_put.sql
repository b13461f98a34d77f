-- Remembers the version a record was deleted at; parameters: object type,
-- id, version.
INSERT INTO hubsync_record_gone (ObjectType, RecordID, Version) VALUES (?, ?, ?)
ON CONFLICT (ObjectType, RecordID) DO UPDATE SET Version = excluded.Version
