-- Writes many pushed states at once: the fourth argument is a JSON array of
-- {"r": recordID, "e": externalID, "v": version, "f": fields or null,
-- "d": deleted, "t": event date in unix microseconds}.
-- WHERE true keeps SQLite from reading ON CONFLICT as a join constraint.
INSERT INTO hubsync_pushed (Destination, ObjectType, RecordID, ExternalID, Version, Fields, Deleted, EventDate, LastModifiedDate)
SELECT ?, ?, json_extract(value, '$.r'), json_extract(value, '$.e'), json_extract(value, '$.v'),
       json_extract(value, '$.f'), json_extract(value, '$.d'), json_extract(value, '$.t'), ?
FROM json_each(?) WHERE true
ON CONFLICT (Destination, ObjectType, RecordID)
DO UPDATE SET ExternalID = excluded.ExternalID, Version = excluded.Version, Fields = excluded.Fields,
    Deleted = excluded.Deleted, EventDate = excluded.EventDate, LastModifiedDate = excluded.LastModifiedDate
