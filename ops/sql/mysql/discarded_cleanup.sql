-- Deletes up to a batch of discarded dead letters discarded before the
-- cutoff, found by hubsync_discarded_event_date (migration 016). MySQL
-- cannot delete from a table it selects from in a subquery.
DELETE FROM hubsync_discarded_event WHERE DiscardedDate < ? LIMIT ?
