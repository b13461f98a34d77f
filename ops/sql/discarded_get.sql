-- One discarded event by id; parameter: the event id.
SELECT Direction, Reason, DiscardedDate FROM hubsync_discarded_event WHERE Id = ?
