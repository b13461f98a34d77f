-- Claims a key for a first request: nothing happens if the key exists (the
-- no-op update changes no row, so a duplicate reports 0 rows affected).
INSERT INTO hubsync_idempotency (scope, idempotency_key, request_hash, status_code, content_type, response_body, created_at)
VALUES (?, ?, ?, 0, '', NULL, ?)
ON DUPLICATE KEY UPDATE scope = scope
