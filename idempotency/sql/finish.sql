-- Stores the response of a key's first request.
UPDATE hubsync_idempotency SET status_code = ?, content_type = ?, location = ?, response_body = ?
WHERE scope = ? AND idempotency_key = ? AND status_code = 0
