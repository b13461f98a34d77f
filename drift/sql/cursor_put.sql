-- Moves a scan phase's cursor; parameters: phase, object type, last id, now.
INSERT INTO hubsync_drift_cursor (Phase, ObjectType, LastID, LastModifiedDate)
VALUES (?, ?, ?, ?)
ON CONFLICT (Phase, ObjectType)
DO UPDATE SET LastID = excluded.LastID, LastModifiedDate = excluded.LastModifiedDate
