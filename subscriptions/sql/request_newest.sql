-- The newest request of one (brand, product, contact): the state HubSpot must end in.
SELECT id, brand_id, product_id, contact_key, desired_state, mapping_version, idempotency_key, request_hash, sync_status, sync_detail, applied_sequence, created_at, updated_at FROM subscription_requests
WHERE brand_id = ? AND product_id = ? AND contact_key = ?
ORDER BY applied_sequence DESC
LIMIT 1
