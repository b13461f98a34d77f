-- A locking read, so a tombstone that a concurrent merge or deletion just
-- committed is seen (and held) before the change is judged against it.
SELECT Kind, SurvivorID, OccurredAt FROM hubsync_tombstone
WHERE Destination = ? AND ObjectType = ? AND ExternalID = ?
FOR UPDATE
