-- Marks the requests older than a sequence the worker settled superseded:
-- those still pending, and, when the settled one reached HubSpot (the last
-- parameter is 'synced'), the failed ones too: the contact's state is a
-- newer request's now, and nothing is left to fix or retry for them.
UPDATE subscription_requests SET sync_status = 'superseded', updated_at = ?
WHERE brand_id = ? AND product_id = ? AND contact_key = ? AND applied_sequence < ?
  AND (sync_status = 'pending' OR (sync_status = 'failed' AND ? = 'synced'))
