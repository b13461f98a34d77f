-- A claim is one call of the queue's claim function (migration 021), in
-- autocommit: one round trip, where the statement with its planner settings
-- (SET LOCAL) in a transaction of its own took four (BEGIN, the settings, the
-- claim, COMMIT). The settings are the function's SET clauses, in force only
-- while it runs. The arguments are Claim.sql's parameters in the order of
-- their first use there, which is the functions' parameter order
-- (TestClaimFunctionsMatchClaimSQL).
SELECT {{cols . ""}} FROM hubsync_claim_{{.Dir}}({{if .Key}}@key, {{end}}@now, @limit, @max_per_record, @owner, @lease_expires)
