-- Creates key's row if absent; concurrent callers all succeed.
INSERT IGNORE INTO hubsync_budget (BudgetKey, WindowCounts) VALUES (?, '')
