-- Reads key's state. The transaction is immediate (BEGIN IMMEDIATE, see
-- sqlitestore.ParseURL), so it already holds the database's write lock.
SELECT BucketMicros, WindowHead, WindowCounts, DayNumber, DayCount, PausedUntilMicros, ClockMicros, ShortMicros,
    DayEndMicros, TimeZone
FROM hubsync_budget WHERE BudgetKey = ?
