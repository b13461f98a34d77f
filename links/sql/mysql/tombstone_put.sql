-- A tombstone only moves forward: a newer deletion or merge replaces it, an
-- older or equal one leaves it. MySQL assigns left to right, so OccurredAt is
-- compared before it is set, and set last.
INSERT INTO hubsync_tombstone (Destination, ObjectType, ExternalID, Kind, SurvivorID, OccurredAt, CreatedDate)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE
    Kind = IF(VALUES(OccurredAt) > OccurredAt, VALUES(Kind), Kind),
    SurvivorID = IF(VALUES(OccurredAt) > OccurredAt, VALUES(SurvivorID), SurvivorID),
    OccurredAt = GREATEST(OccurredAt, VALUES(OccurredAt))
