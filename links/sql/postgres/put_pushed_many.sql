-- Writes many pushed states at once: the fourth argument is a JSON array of
-- {"r": recordID, "e": externalID, "v": version, "f": fields or null,
-- "d": deleted, "t": event date in unix microseconds, "s": the events' highest
-- Seq}. A stored state is replaced only by a newer one: a higher Seq, or the
-- same Seq (states from before migration 012 have 0) and a version no lower.
INSERT INTO hubsync_pushed (Destination, ObjectType, RecordID, ExternalID, Version, Fields, Deleted, EventDate, LastModifiedDate, Seq)
SELECT ?, ?, p->>'r', p->>'e', CAST(p->>'v' AS bigint), NULLIF(p->'f', 'null'::jsonb), CAST(p->>'d' AS boolean),
       TIMESTAMPTZ 'epoch' + CAST(p->>'t' AS bigint) * INTERVAL '1 microsecond', CAST(? AS timestamptz),
       CAST(p->>'s' AS bigint)
FROM jsonb_array_elements(CAST(? AS jsonb)) AS p
ON CONFLICT (Destination, ObjectType, RecordID)
DO UPDATE SET ExternalID = excluded.ExternalID, Version = excluded.Version, Fields = excluded.Fields,
    Deleted = excluded.Deleted, EventDate = excluded.EventDate, LastModifiedDate = excluded.LastModifiedDate,
    Seq = excluded.Seq
WHERE excluded.Seq > hubsync_pushed.Seq
    OR (excluded.Seq = hubsync_pushed.Seq AND excluded.Version >= hubsync_pushed.Version)
