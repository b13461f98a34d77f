SELECT last_sequence FROM subscription_sequence
WHERE brand_id = ? AND product_id = ? AND contact_key = ?
