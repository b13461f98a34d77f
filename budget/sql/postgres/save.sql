-- Writes key's state back under the lock taken by lock.sql.
UPDATE hubsync_budget SET BucketMicros = $1, WindowHead = $2, WindowCounts = $3, DayNumber = $4,
    DayCount = $5, PausedUntilMicros = $6, ClockMicros = $7
WHERE BudgetKey = $8
