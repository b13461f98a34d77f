-- Deletes a batch request_cleanup_select chose (a JSON array of ids), each
-- only while it is still settled for good and older than the cutoff. That
-- each still has a newer request needs no second look: sequences only grow,
-- and the newest request of a contact is never deleted. The ids are an
-- array, one primary key probe each: with id IN (…) the planner may hash
-- them and read the whole table.
DELETE FROM subscription_requests
WHERE id = ANY (ARRAY(SELECT jsonb_array_elements_text(CAST(? AS jsonb))))
  AND sync_status IN ('synced', 'superseded') AND updated_at < ?
