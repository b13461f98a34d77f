-- Settles one request; a settled request never returns to pending.
UPDATE subscription_requests SET sync_status = ?, sync_detail = ?, updated_at = ?
WHERE id = ? AND sync_status = 'pending'
