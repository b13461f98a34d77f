-- A phase that reached its end starts from the beginning next time.
DELETE FROM hubsync_drift_cursor WHERE Phase = ? AND ObjectType = ?
