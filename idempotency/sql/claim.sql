-- Claims a key for a first request: nothing happens if the key exists.
INSERT INTO hubsync_idempotency (scope, idempotency_key, request_hash, status_code, content_type, response_body, created_at)
VALUES (?, ?, ?, 0, '', NULL, ?)
ON CONFLICT (scope, idempotency_key) DO NOTHING
