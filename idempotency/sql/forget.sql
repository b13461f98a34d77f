-- Forgets a key whose first request did not complete (a 5xx).
DELETE FROM hubsync_idempotency WHERE scope = ? AND idempotency_key = ?
