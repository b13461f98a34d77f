-- SQLite write transactions hold the write lock from BEGIN, so a plain read is
-- already current.
SELECT Kind, SurvivorID, OccurredAt FROM hubsync_tombstone
WHERE Destination = ? AND ObjectType = ? AND ExternalID = ?
