-- When (unix microseconds, on the reserving replica's clock) the budget was
-- last short: it refused a reservation, or booked one ahead because the
-- window had no room for it (budget.Reservation.Full). Every replica reads
-- it (budget.WindowUse.ShortAt), so that a replica that just started holds
-- its calls for fuller batches as its peers do (outbound.Config.Hold),
-- rather than first spending the window on small calls. 0: never.
ALTER TABLE hubsync_budget ADD COLUMN ShortMicros BIGINT NOT NULL DEFAULT 0;
