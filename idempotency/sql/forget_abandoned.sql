-- Forgets a key whose first request never finished (its server stopped mid-
-- request): only the in-progress row claimed before the cutoff, so a
-- concurrent retry that already took the key over keeps its claim.
DELETE FROM hubsync_idempotency WHERE scope = ? AND idempotency_key = ? AND status_code = 0 AND created_at < ?
