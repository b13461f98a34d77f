-- Moves a scan phase's cursor; parameters: phase, object type, last id, now.
INSERT INTO hubsync_drift_cursor (Phase, ObjectType, LastID, LastModifiedDate)
VALUES (?, ?, ?, ?)
ON DUPLICATE KEY UPDATE LastID = VALUES(LastID), LastModifiedDate = VALUES(LastModifiedDate)
