-- Removes a tombstone older than a given time (the id is known to be live then).
DELETE FROM hubsync_tombstone
WHERE Destination = ? AND ObjectType = ? AND ExternalID = ? AND OccurredAt < ?
