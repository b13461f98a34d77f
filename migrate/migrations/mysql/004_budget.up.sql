-- The shared HubSpot call budget (package budget): one row per key, locked with
-- SELECT ... FOR UPDATE for each reservation. Times are BIGINT unix microseconds
-- read from the replicas' (injectable) clocks, never from the database's NOW().
CREATE TABLE hubsync_budget (
    BudgetKey         VARCHAR(255) NOT NULL PRIMARY KEY,
    -- sliding window: bucket width, index of the newest bucket, and the nonzero
    -- buckets as "age:count" pairs counted back from it
    BucketMicros      BIGINT       NOT NULL DEFAULT 0,
    WindowHead        BIGINT       NOT NULL DEFAULT 0,
    WindowCounts      TEXT         NOT NULL,
    -- calls counted on UTC day DayNumber (days since 1970-01-01)
    DayNumber         BIGINT       NOT NULL DEFAULT 0,
    DayCount          BIGINT       NOT NULL DEFAULT 0,
    -- no grants before this (set after a 429)
    PausedUntilMicros BIGINT       NOT NULL DEFAULT 0,
    -- latest clock reading any replica recorded for this key
    ClockMicros       BIGINT       NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
