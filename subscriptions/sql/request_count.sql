SELECT COUNT(*) FROM subscription_requests WHERE brand_id = ? AND product_id = ? AND contact_key = ?
