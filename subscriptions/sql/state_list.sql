SELECT brand_id, product_id, contact_key, desired_state, applied_sequence, updated_at
FROM contact_subscription_state
WHERE applied_sequence > 0
ORDER BY brand_id, product_id, contact_key
