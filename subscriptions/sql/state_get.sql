SELECT desired_state, applied_sequence, updated_at FROM contact_subscription_state
WHERE brand_id = ? AND product_id = ? AND contact_key = ?
