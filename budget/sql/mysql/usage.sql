-- Budget use per key, read-only, for operators (`hubsync status`). Portable:
-- the same text on every dialect.
SELECT BudgetKey, DayNumber, DayCount, PausedUntilMicros, DayEndMicros, TimeZone FROM hubsync_budget ORDER BY BudgetKey
