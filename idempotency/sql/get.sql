SELECT request_hash, status_code, content_type, location, response_body, created_at
FROM hubsync_idempotency WHERE scope = ? AND idempotency_key = ?
