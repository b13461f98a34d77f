-- See ../merged_many.sql. Each id is one probe of the primary key, whatever
-- the planner's statistics, as in lookup_many.sql (which says why).
SELECT t.ExternalID, t.SurvivorID, t.OccurredAt
FROM jsonb_array_elements_text(CAST($3 AS jsonb)) AS j(id)
CROSS JOIN LATERAL (
    SELECT Destination, ObjectType, ExternalID, Kind, SurvivorID, OccurredAt FROM hubsync_tombstone
    WHERE (Destination, ObjectType, ExternalID) >= ($1, $2, j.id)
    ORDER BY Destination, ObjectType, ExternalID
    LIMIT 1
) AS t
WHERE t.Destination = $1 AND t.ObjectType = $2 AND t.ExternalID = j.id AND t.Kind = 'merged'
