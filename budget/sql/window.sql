-- One key's stored window, read-only and without a lock, for operators (the
-- dashboard). Portable: the same text on every dialect.
SELECT BucketMicros, WindowHead, WindowCounts, DayNumber, DayCount, PausedUntilMicros, ClockMicros, ShortMicros,
    DayEndMicros, TimeZone
FROM hubsync_budget WHERE BudgetKey = ?
