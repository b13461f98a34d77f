-- Deletes up to a batch of discarded dead letters discarded before the
-- cutoff, found by hubsync_discarded_event_date (migration 016).
DELETE FROM hubsync_discarded_event WHERE Id IN (
    SELECT Id FROM hubsync_discarded_event WHERE DiscardedDate < ? LIMIT ?)
