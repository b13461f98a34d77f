-- Planner settings for the claim's transaction only (set_config(..., true) is
-- SET LOCAL): the claim must be index ranges with a LIMIT and index probes
-- joined by nested loops whatever the statistics say. Without statistics (a
-- fresh table filled quickly, a restart that lost them) the planner chose, on
-- estimates of a few rows, a bitmap scan of every due lane followed by a sort,
-- and hash joins that read the queue table; each costs in proportion to the
-- backlog. With these off, the plan is the same with no statistics, stale
-- statistics and fresh ones (stale_stats_test.go). The sort of the ok CTE
-- (at most Limit × MaxPerRecord rows in memory) has no alternative and stays.
-- A disabled node adds a huge constant to the plan's cost estimate, which
-- would pass jit_above_cost and compile the statement (seconds of JIT for a
-- millisecond claim): JIT is off too.
SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
    set_config('enable_sort', 'off', true), set_config('enable_hashjoin', 'off', true),
    set_config('enable_mergejoin', 'off', true), set_config('jit', 'off', true)
