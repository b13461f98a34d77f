-- The seed's conditional update: a contact's state only moves forward.
UPDATE contact_subscription_state
SET applied_sequence = ?, desired_state = ?, updated_at = ?
WHERE brand_id = ? AND product_id = ? AND contact_key = ?
  AND applied_sequence < ?
