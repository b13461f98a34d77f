-- Writes key's state back under the lock taken by lock.sql.
UPDATE hubsync_budget SET BucketMicros = ?, WindowHead = ?, WindowCounts = ?, DayNumber = ?,
    DayCount = ?, PausedUntilMicros = ?, ClockMicros = ?, ShortMicros = ?, DayEndMicros = ?, TimeZone = ?
WHERE BudgetKey = ?
