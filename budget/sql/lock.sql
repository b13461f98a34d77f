-- Reads key's state and holds its row lock until the transaction ends, so
-- replicas reserve one at a time.
SELECT BucketMicros, WindowHead, WindowCounts, DayNumber, DayCount, PausedUntilMicros, ClockMicros, ShortMicros,
    DayEndMicros, TimeZone
FROM hubsync_budget WHERE BudgetKey = ? FOR UPDATE
