-- Takes the next sequence of one (brand, product, contact); the row stays
-- locked until the request's transaction ends, so sequences follow commits.
INSERT INTO subscription_sequence (brand_id, product_id, contact_key, last_sequence)
VALUES (?, ?, ?, 1)
ON CONFLICT (brand_id, product_id, contact_key)
DO UPDATE SET last_sequence = subscription_sequence.last_sequence + 1
