-- A locking read: under REPEATABLE READ a plain read would see the snapshot of
-- the transaction's first read and miss a tombstone committed since; the
-- locking read also gap-locks a missing row, so a concurrent insert of it waits.
SELECT Kind, SurvivorID, OccurredAt FROM hubsync_tombstone
WHERE Destination = ? AND ObjectType = ? AND ExternalID = ?
FOR UPDATE
