-- Claim functions (issue 16): each queue's claim in one server-side call.
--
-- hubsync_claim_<queue> runs the queue's claim statement, store/pgstore/sql/
-- Claim.sql rendered for the queue (the engine renders the same file, and
-- TestClaimFunctionsMatchClaimSQL requires every body here to equal it
-- without its comments, so that file stays the statement's one source; a
-- change there needs a migration that replaces these functions). The engine
-- calls the function in autocommit (store/pgstore/sql/ClaimCall.sql): one
-- round trip, where the statement, run in a transaction of its own after its
-- planner settings (SET LOCAL), took four.
--
-- The planner settings are the functions' SET clauses, in force while the
-- function runs and restored when it returns, whatever the caller's session
-- has set. The claim must be index ranges with a LIMIT and index probes
-- joined by nested loops whatever the statistics say. Without statistics (a
-- fresh table filled quickly, a restart that lost them) the planner chose, on
-- estimates of a few rows, a bitmap scan of every due lane followed by a
-- sort, and hash joins that read the queue table; each costs in proportion
-- to the backlog. With these off, the plan is the same with no statistics,
-- stale statistics and fresh ones (store/pgstore/stale_stats_test.go, which
-- reads the plan the function really ran through auto_explain). The sort of
-- the ok CTE (at most Limit × MaxPerRecord rows in memory) has no
-- alternative and stays. A disabled node adds a huge constant to the plan's
-- cost estimate, which would pass jit_above_cost and compile the statement
-- (seconds of JIT for a millisecond claim): JIT is off too.
--
-- plpgsql, RETURN QUERY of the statement: plpgsql keeps the statement's plan
-- for the session, where a SQL function with SET clauses (never inlined)
-- plans it again at every call (about a millisecond of a 20 ms claim under
-- load, in an interleaved comparison). plan_cache_mode = force_generic_plan
-- makes that kept plan the generic one from the first call on, instead of
-- five plans for the first calls' values and then, maybe, the generic one:
-- every call runs the same plan, the one the plan tests see. The parameters
-- are the statement's, in the order of their first use ($1, $2, … in the
-- body).

CREATE FUNCTION hubsync_claim_inbound(p_key text, p_now timestamptz, p_limit integer, p_max_per_record integer, p_owner text, p_lease_expires timestamptz)
    RETURNS SETOF _System_IntegrationInbound LANGUAGE plpgsql VOLATILE
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
    SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
    SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
RETURN QUERY
WITH lanes AS MATERIALIZED (
    SELECT n.Source, n.ObjectType, n.ExternalID FROM hubsync_lane_inbound n
    WHERE n.Source = $1 AND n.DueDate <= $2
    ORDER BY n.Source, n.DueDate, n.HeadId
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), evs AS MATERIALIZED (
    SELECT s.Id, s.pos, l.Source, l.ObjectType, l.ExternalID FROM lanes l
    CROSS JOIN LATERAL (
        SELECT f.Id, ROW_NUMBER() OVER (ORDER BY f.Lane) AS pos,
            SUM(CASE WHEN (f.Status = 'pending' AND f.NextAttemptDate <= $2)
                       OR (f.Status = 'processing' AND f.LeaseExpiresDate < $2)
                     THEN 0 ELSE 1 END) OVER (ORDER BY f.Lane) AS blocked
        FROM _System_IntegrationInbound f
        WHERE f.Source = l.Source AND f.ObjectType = l.ObjectType AND f.ExternalID = l.ExternalID AND f.Status IN ('pending', 'processing')
        ORDER BY f.Lane LIMIT $4
    ) s
    WHERE s.blocked = 0
      AND NOT EXISTS (
        SELECT 1 FROM _System_IntegrationInbound x
        WHERE x.Source = l.Source AND x.ObjectType = l.ObjectType AND x.ExternalID = l.ExternalID AND x.LeaseExpiresDate >= $2 OFFSET 0)
), locked AS MATERIALIZED (
    SELECT v.* FROM evs v JOIN _System_IntegrationInbound e ON e.Id = v.Id
    FOR UPDATE OF e SKIP LOCKED
), ok AS MATERIALIZED (
    SELECT z.Id FROM (
        SELECT k.Id, k.pos, ROW_NUMBER() OVER (PARTITION BY k.Source, k.ObjectType, k.ExternalID ORDER BY k.pos) AS n
        FROM locked k) z
    WHERE z.pos = z.n
)
UPDATE _System_IntegrationInbound AS t
SET Status = 'processing', LeaseOwner = $5, LeaseExpiresDate = $6,
    Attempt = t.Attempt + 1, LastModifiedDate = $2
FROM ok AS c
WHERE t.Id = c.Id AND ((t.Status = 'pending' AND t.NextAttemptDate <= $2)
      OR (t.Status = 'processing' AND t.LeaseExpiresDate < $2))
RETURNING t.*;
END
$$;

CREATE FUNCTION hubsync_claim_outbound(p_key text, p_now timestamptz, p_limit integer, p_max_per_record integer, p_owner text, p_lease_expires timestamptz)
    RETURNS SETOF _System_IntegrationOutbound LANGUAGE plpgsql VOLATILE
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
    SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
    SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
RETURN QUERY
WITH lanes AS MATERIALIZED (
    SELECT n.Destination, n.ObjectType, n.RecordID FROM hubsync_lane_outbound n
    WHERE n.Destination = $1 AND n.DueDate <= $2
    ORDER BY n.Destination, n.DueDate, n.HeadId
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), evs AS MATERIALIZED (
    SELECT s.Id, s.pos, l.Destination, l.ObjectType, l.RecordID FROM lanes l
    CROSS JOIN LATERAL (
        SELECT f.Id, ROW_NUMBER() OVER (ORDER BY f.Lane) AS pos,
            SUM(CASE WHEN (f.Status = 'pending' AND f.NextAttemptDate <= $2)
                       OR (f.Status = 'processing' AND f.LeaseExpiresDate < $2)
                     THEN 0 ELSE 1 END) OVER (ORDER BY f.Lane) AS blocked
        FROM _System_IntegrationOutbound f
        WHERE f.Destination = l.Destination AND f.ObjectType = l.ObjectType AND f.RecordID = l.RecordID AND f.Status IN ('pending', 'processing')
        ORDER BY f.Lane LIMIT $4
    ) s
    WHERE s.blocked = 0
      AND NOT EXISTS (
        SELECT 1 FROM _System_IntegrationOutbound x
        WHERE x.Destination = l.Destination AND x.ObjectType = l.ObjectType AND x.RecordID = l.RecordID AND x.LeaseExpiresDate >= $2 OFFSET 0)
), locked AS MATERIALIZED (
    SELECT v.* FROM evs v JOIN _System_IntegrationOutbound e ON e.Id = v.Id
    FOR UPDATE OF e SKIP LOCKED
), ok AS MATERIALIZED (
    SELECT z.Id FROM (
        SELECT k.Id, k.pos, ROW_NUMBER() OVER (PARTITION BY k.Destination, k.ObjectType, k.RecordID ORDER BY k.pos) AS n
        FROM locked k) z
    WHERE z.pos = z.n
)
UPDATE _System_IntegrationOutbound AS t
SET Status = 'processing', LeaseOwner = $5, LeaseExpiresDate = $6,
    Attempt = t.Attempt + 1, LastModifiedDate = $2
FROM ok AS c
WHERE t.Id = c.Id AND ((t.Status = 'pending' AND t.NextAttemptDate <= $2)
      OR (t.Status = 'processing' AND t.LeaseExpiresDate < $2))
RETURNING t.*;
END
$$;

CREATE FUNCTION hubsync_claim_internal(p_now timestamptz, p_limit integer, p_max_per_record integer, p_owner text, p_lease_expires timestamptz)
    RETURNS SETOF _System_OutboxEvent LANGUAGE plpgsql VOLATILE
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
    SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
    SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
RETURN QUERY
WITH lanes AS MATERIALIZED (
    SELECT n.ObjectType, n.RecordID FROM hubsync_lane_internal n
    WHERE n.DueDate <= $1
    ORDER BY n.DueDate, n.HeadId
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), evs AS MATERIALIZED (
    SELECT s.Id, s.pos, l.ObjectType, l.RecordID FROM lanes l
    CROSS JOIN LATERAL (
        SELECT f.Id, ROW_NUMBER() OVER (ORDER BY f.Lane) AS pos,
            SUM(CASE WHEN (f.Status = 'pending' AND f.NextAttemptDate <= $1)
                       OR (f.Status = 'processing' AND f.LeaseExpiresDate < $1)
                     THEN 0 ELSE 1 END) OVER (ORDER BY f.Lane) AS blocked
        FROM _System_OutboxEvent f
        WHERE f.ObjectType = l.ObjectType AND f.RecordID = l.RecordID AND f.Status IN ('pending', 'processing')
        ORDER BY f.Lane LIMIT $3
    ) s
    WHERE s.blocked = 0
      AND NOT EXISTS (
        SELECT 1 FROM _System_OutboxEvent x
        WHERE x.ObjectType = l.ObjectType AND x.RecordID = l.RecordID AND x.LeaseExpiresDate >= $1 OFFSET 0)
), locked AS MATERIALIZED (
    SELECT v.* FROM evs v JOIN _System_OutboxEvent e ON e.Id = v.Id
    FOR UPDATE OF e SKIP LOCKED
), ok AS MATERIALIZED (
    SELECT z.Id FROM (
        SELECT k.Id, k.pos, ROW_NUMBER() OVER (PARTITION BY k.ObjectType, k.RecordID ORDER BY k.pos) AS n
        FROM locked k) z
    WHERE z.pos = z.n
)
UPDATE _System_OutboxEvent AS t
SET Status = 'processing', LeaseOwner = $4, LeaseExpiresDate = $5,
    Attempt = t.Attempt + 1, LastModifiedDate = $1
FROM ok AS c
WHERE t.Id = c.Id AND ((t.Status = 'pending' AND t.NextAttemptDate <= $1)
      OR (t.Status = 'processing' AND t.LeaseExpiresDate < $1))
RETURNING t.*;
END
$$;
