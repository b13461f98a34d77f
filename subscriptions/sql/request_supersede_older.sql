-- Marks the still pending requests older than a sequence the worker settled.
UPDATE subscription_requests SET sync_status = 'superseded', updated_at = ?
WHERE brand_id = ? AND product_id = ? AND contact_key = ? AND applied_sequence < ? AND sync_status = 'pending'
