-- The shared HubSpot call budget (package budget): one row per key, read and
-- written in one immediate transaction per reservation. Times are INTEGER unix
-- microseconds read from the replicas' (injectable) clocks.
CREATE TABLE hubsync_budget (
    BudgetKey         TEXT    PRIMARY KEY,
    -- sliding window: bucket width, index of the newest bucket, and the nonzero
    -- buckets as "age:count" pairs counted back from it
    BucketMicros      INTEGER NOT NULL DEFAULT 0,
    WindowHead        INTEGER NOT NULL DEFAULT 0,
    WindowCounts      TEXT    NOT NULL DEFAULT '',
    -- calls counted on UTC day DayNumber (days since 1970-01-01)
    DayNumber         INTEGER NOT NULL DEFAULT 0,
    DayCount          INTEGER NOT NULL DEFAULT 0,
    -- no grants before this (set after a 429)
    PausedUntilMicros INTEGER NOT NULL DEFAULT 0,
    -- latest clock reading any replica recorded for this key
    ClockMicros       INTEGER NOT NULL DEFAULT 0
);
