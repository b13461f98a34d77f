-- Deletes up to a batch of discarded dead letters discarded before the
-- cutoff, found by hubsync_discarded_event_date (migration 016). The ids are
-- an array, one primary key probe each: with Id IN (…) the planner may hash
-- them and read the whole table (as it did for the queues' cleanup).
DELETE FROM hubsync_discarded_event WHERE Id = ANY (ARRAY(
    SELECT Id FROM hubsync_discarded_event WHERE DiscardedDate < ? LIMIT ?))
