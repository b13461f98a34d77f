-- A tombstone only moves forward: a newer deletion or merge replaces it, an
-- older or equal one (a replay, a late delivery) leaves it as it is.
INSERT INTO hubsync_tombstone (Destination, ObjectType, ExternalID, Kind, SurvivorID, OccurredAt, CreatedDate)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (Destination, ObjectType, ExternalID)
DO UPDATE SET Kind = excluded.Kind, SurvivorID = excluded.SurvivorID, OccurredAt = excluded.OccurredAt
WHERE excluded.OccurredAt > hubsync_tombstone.OccurredAt
