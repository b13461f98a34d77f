-- Settles one request; a settled request never returns to pending. A failed
-- one (its event dead-lettered) may settle again once an operator re-queues
-- the event: synced when it then reaches HubSpot, superseded when a newer
-- request reached HubSpot first.
UPDATE subscription_requests SET sync_status = ?, sync_detail = ?, updated_at = ?
WHERE id = ? AND (sync_status = 'pending' OR (sync_status = 'failed' AND ? IN ('synced', 'superseded')))
