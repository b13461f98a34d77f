-- Deletes a batch request_cleanup_select chose (a JSON array of ids), each
-- only while it is still settled for good and older than the cutoff. That
-- each still has a newer request needs no second look: sequences only grow,
-- and the newest request of a contact is never deleted.
DELETE FROM subscription_requests
WHERE id IN (SELECT value FROM json_each(?))
  AND sync_status IN ('synced', 'superseded') AND updated_at < ?
