-- One batch of the requests Cleanup deletes: of one status (synced or
-- superseded, both final), last changed before the cutoff, after the
-- previous batch's last (updated_at, id), and not the newest of their
-- contact (the pusher reads that one, Newest), in
-- subscription_requests_settled's order (migration 033). The newest of each
-- contact is passed over once per run, not once per batch. Parameters:
-- status, cutoff, cursor updated_at (twice), cursor id, batch size.
--
-- Both indexes are forced: with the statistics of a table that filled up
-- faster than InnoDB recomputes them, MariaDB looked for each request's
-- newest through the unique (brand_id, product_id, idempotency_key) index,
-- reading every request of the brand and product per request
-- (TestCleanupPlans).
SELECT r.id, r.updated_at FROM subscription_requests r FORCE INDEX (subscription_requests_settled)
WHERE r.sync_status = ? AND r.updated_at < ?
  AND r.updated_at >= ? AND (r.updated_at > ? OR r.id > ?)
  AND r.applied_sequence < (
    SELECT MAX(n.applied_sequence) FROM subscription_requests n FORCE INDEX (subscription_requests_contact)
    WHERE n.brand_id = r.brand_id AND n.product_id = r.product_id AND n.contact_key = r.contact_key)
ORDER BY r.updated_at, r.id
LIMIT ?
