-- Creates a contact's state row at sequence 0, so that the conditional
-- update below is the only way it advances.
INSERT INTO contact_subscription_state (brand_id, product_id, contact_key, desired_state, applied_sequence, updated_at)
VALUES (?, ?, ?, '', 0, ?)
ON DUPLICATE KEY UPDATE brand_id = brand_id
