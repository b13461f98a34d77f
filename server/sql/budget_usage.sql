-- Budget use per key, read-only, for `hubsync status` (table hubsync_budget of
-- package budget, migration 004). Portable: the same text on every dialect.
SELECT BudgetKey, DayNumber, DayCount, PausedUntilMicros FROM hubsync_budget ORDER BY BudgetKey
