-- The last id a scan phase compared for one object type.
SELECT LastID FROM hubsync_drift_cursor WHERE Phase = ? AND ObjectType = ?
