DELETE FROM hubsync_idempotency WHERE created_at < ?
