-- Writes many pushed states at once: the fourth argument is a JSON array of
-- {"r": recordID, "e": externalID, "v": version, "f": fields or null,
-- "d": deleted, "t": event date in unix microseconds}.
INSERT INTO hubsync_pushed (Destination, ObjectType, RecordID, ExternalID, Version, Fields, Deleted, EventDate, LastModifiedDate)
SELECT ?, ?, p->>'r', p->>'e', CAST(p->>'v' AS bigint), NULLIF(p->'f', 'null'::jsonb), CAST(p->>'d' AS boolean),
       TIMESTAMPTZ 'epoch' + CAST(p->>'t' AS bigint) * INTERVAL '1 microsecond', CAST(? AS timestamptz)
FROM jsonb_array_elements(CAST(? AS jsonb)) AS p
ON CONFLICT (Destination, ObjectType, RecordID)
DO UPDATE SET ExternalID = excluded.ExternalID, Version = excluded.Version, Fields = excluded.Fields,
    Deleted = excluded.Deleted, EventDate = excluded.EventDate, LastModifiedDate = excluded.LastModifiedDate
