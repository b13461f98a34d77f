-- Forgets a key that expired: only the row created before the cutoff, so a
-- concurrent retry that already forgot it and claimed the key afresh keeps
-- its claim.
DELETE FROM hubsync_idempotency WHERE scope = ? AND idempotency_key = ? AND created_at < ?
