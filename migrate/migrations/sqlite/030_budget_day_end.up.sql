-- The end of the day DayCount counts (unix microseconds): the next midnight
-- of the HubSpot account's time zone when the day began, so that any replica
-- (and `hubsync status`) knows when today's count resets without knowing the
-- zone. 0 on a row written before: its DayNumber is a UTC day.
ALTER TABLE hubsync_budget ADD COLUMN DayEndMicros INTEGER NOT NULL DEFAULT 0;
-- The account's time zone (IANA name) as the last replica that knew it
-- wrote it: a replica that could not learn it (HubSpot did not answer at its
-- start) begins the next day at this zone's midnight. '': never known.
ALTER TABLE hubsync_budget ADD COLUMN TimeZone TEXT NOT NULL DEFAULT '';
