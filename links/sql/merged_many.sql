-- The merged-away tombstones among many external ids in one query; the
-- third argument is a JSON array of external ids.
SELECT ExternalID, SurvivorID, OccurredAt FROM hubsync_tombstone
WHERE Destination = ? AND ObjectType = ? AND Kind = 'merged'
  AND ExternalID IN (SELECT value FROM json_each(?))
