-- Deletes a batch request_cleanup_select chose (a JSON array of ids), each
-- only while it is still settled for good and older than the cutoff. That
-- each still has a newer request needs no second look: sequences only grow,
-- and the newest request of a contact is never deleted. A join, one primary
-- key probe per id: MariaDB before 11.1 runs a single-table DELETE's
-- IN (subquery) per row of the table.
DELETE r FROM subscription_requests AS r
JOIN JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(36) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j ON r.id = j.id
WHERE r.sync_status IN ('synced', 'superseded') AND r.updated_at < ?
