-- One batch of the requests Cleanup deletes: of one status (synced or
-- superseded, both final), last changed before the cutoff, after the
-- previous batch's last (updated_at, id), and not the newest of their
-- contact (the pusher reads that one, Newest), in
-- subscription_requests_settled's order (migration 033). The newest of each
-- contact is passed over once per run, not once per batch. Parameters:
-- status, cutoff, cursor updated_at (twice), cursor id, batch size.
--
-- The newest is found by a correlated MAX, one probe of
-- subscription_requests_contact per row read: every dialect runs a scalar
-- subquery per row, where a NOT EXISTS may be planned as a join that reads
-- the whole table.
SELECT r.id, r.updated_at FROM subscription_requests r
WHERE r.sync_status = ? AND r.updated_at < ?
  AND r.updated_at >= ? AND (r.updated_at > ? OR r.id > ?)
  AND r.applied_sequence < (
    SELECT MAX(n.applied_sequence) FROM subscription_requests n
    WHERE n.brand_id = r.brand_id AND n.product_id = r.product_id AND n.contact_key = r.contact_key)
ORDER BY r.updated_at, r.id
LIMIT ?
