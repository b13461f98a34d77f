-- Inserts a request unless its (brand, product, Idempotency-Key) exists: the
-- no-op update changes no row, so a duplicate reports 0 rows affected.
INSERT INTO subscription_requests (id, brand_id, product_id, contact_key, desired_state, mapping_version, idempotency_key, request_hash, sync_status, sync_detail, applied_sequence, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', '', ?, ?, ?)
ON DUPLICATE KEY UPDATE id = id
