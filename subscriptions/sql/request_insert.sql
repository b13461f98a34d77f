-- Inserts a request unless its (brand, product, Idempotency-Key) exists.
INSERT INTO subscription_requests (id, brand_id, product_id, contact_key, desired_state, mapping_version, idempotency_key, request_hash, sync_status, sync_detail, applied_sequence, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', '', ?, ?, ?)
ON CONFLICT (brand_id, product_id, idempotency_key) DO NOTHING
