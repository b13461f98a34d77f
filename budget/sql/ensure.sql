-- Creates key's row if absent; concurrent callers all succeed.
INSERT INTO hubsync_budget (BudgetKey, WindowCounts) VALUES (?, '') ON CONFLICT (BudgetKey) DO NOTHING
