-- Writes many pushed states at once: the fourth argument is a JSON array of
-- {"r": recordID, "e": externalID, "v": version, "f": fields or null,
-- "d": deleted, "t": event date in unix microseconds, "s": the events' highest
-- Seq}. A stored state is replaced only by a newer one: a higher Seq, or the
-- same Seq (states from before migration 012 have 0) and a version no lower,
-- so pushed state never moves backwards when writers race.
-- WHERE true keeps SQLite from reading ON CONFLICT as a join constraint.
INSERT INTO hubsync_pushed (Destination, ObjectType, RecordID, ExternalID, Version, Fields, Deleted, EventDate, LastModifiedDate, Seq)
SELECT ?, ?, json_extract(value, '$.r'), json_extract(value, '$.e'), json_extract(value, '$.v'),
       json_extract(value, '$.f'), json_extract(value, '$.d'), json_extract(value, '$.t'), ?, json_extract(value, '$.s')
FROM json_each(?) WHERE true
ON CONFLICT (Destination, ObjectType, RecordID)
DO UPDATE SET ExternalID = excluded.ExternalID, Version = excluded.Version, Fields = excluded.Fields,
    Deleted = excluded.Deleted, EventDate = excluded.EventDate, LastModifiedDate = excluded.LastModifiedDate,
    Seq = excluded.Seq
WHERE excluded.Seq > hubsync_pushed.Seq
    OR (excluded.Seq = hubsync_pushed.Seq AND excluded.Version >= hubsync_pushed.Version)
