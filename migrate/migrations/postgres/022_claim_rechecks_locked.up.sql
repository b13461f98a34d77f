-- The claim re-checks each event it locks (issue: the zombie race). A claim
-- reads a record's events in its statement's snapshot and then locks them; a
-- worker whose lease expired (a zombie) can release one of its events with a
-- delay, or put it in backoff, in a transaction that commits in between. When
-- that event is the record's head, its trigger moves the lane's DueDate past
-- the claim's now, and the lane lock's re-check (DueDate <= now on the lane's
-- newest version) drops the record. When it is a follower, and the head stays
-- claimable (the zombie's head still processing under its expired lease, or
-- a pending head released before), the lane does not change: only the event's
-- row lock sees the new version. The UPDATE's re-check (claimable) dropped
-- that follower but leased the events behind it, out of order.
--
-- The claim's locked CTE (the template lockprefix of the PostgreSQL queries)
-- now re-checks each row it locks: claimable, or finished. PostgreSQL
-- evaluates locked's WHERE on the newest version of a row that a commit after
-- the snapshot changed, so the delayed follower leaves locked, and ok, which
-- keeps each record's events up to the first gap, stops the record there. An
-- event finished meanwhile (a zombie's Complete or Fail) blocks nothing, as
-- in the snapshot's walk: it stays in locked, the UPDATE's re-check drops
-- it, and the events behind it are leased as before. TestClaimZombieRace
-- forces each of these interleavings, of the head and of a follower.
--
-- The rest is migration 021's functions, with Claim.sql's new body
-- (TestClaimFunctionsMatchClaimSQL). ClaimIDs, a plain statement, takes the
-- same template and needs no migration.

CREATE OR REPLACE FUNCTION hubsync_claim_inbound(p_key text, p_now timestamptz, p_limit integer, p_max_per_record integer, p_owner text, p_lease_expires timestamptz)
    RETURNS SETOF _System_IntegrationInbound LANGUAGE plpgsql VOLATILE
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
    SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
    SET plan_cache_mode = force_generic_plan SET hubsync.lanes_kept = 'on'
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
    SELECT v.* FROM evs v JOIN _System_IntegrationInbound t ON t.Id = v.Id
    WHERE ((t.Status = 'pending' AND t.NextAttemptDate <= $2)
      OR (t.Status = 'processing' AND t.LeaseExpiresDate < $2)) OR t.Status NOT IN ('pending', 'processing')
    FOR UPDATE OF t SKIP LOCKED
), ok AS MATERIALIZED (
    SELECT z.Id FROM (
        SELECT k.Id, k.pos, ROW_NUMBER() OVER (PARTITION BY k.Source, k.ObjectType, k.ExternalID ORDER BY k.pos) AS n
        FROM locked k) z
    WHERE z.pos = z.n
), leased AS (
    UPDATE _System_IntegrationInbound AS t
    SET Status = 'processing', LeaseOwner = $5, LeaseExpiresDate = $6,
    Attempt = t.Attempt + 1, LastModifiedDate = $2
    FROM ok AS c
    WHERE t.Id = c.Id AND ((t.Status = 'pending' AND t.NextAttemptDate <= $2)
      OR (t.Status = 'processing' AND t.LeaseExpiresDate < $2))
    RETURNING t.*
), kept AS (
    UPDATE hubsync_lane_inbound AS n
    SET DueDate = GREATEST(n.DueDate, $6 + interval '1 microsecond')
    WHERE n.LaneKey = ANY (ARRAY(SELECT (length(r.Source)::text || ':' || length(r.ObjectType)::text || ':' || r.Source || r.ObjectType || r.ExternalID) FROM leased r))
)
SELECT r.* FROM leased r;
END
$$;

CREATE OR REPLACE FUNCTION hubsync_claim_outbound(p_key text, p_now timestamptz, p_limit integer, p_max_per_record integer, p_owner text, p_lease_expires timestamptz)
    RETURNS SETOF _System_IntegrationOutbound LANGUAGE plpgsql VOLATILE
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
    SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
    SET plan_cache_mode = force_generic_plan SET hubsync.lanes_kept = 'on'
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
    SELECT v.* FROM evs v JOIN _System_IntegrationOutbound t ON t.Id = v.Id
    WHERE ((t.Status = 'pending' AND t.NextAttemptDate <= $2)
      OR (t.Status = 'processing' AND t.LeaseExpiresDate < $2)) OR t.Status NOT IN ('pending', 'processing')
    FOR UPDATE OF t SKIP LOCKED
), ok AS MATERIALIZED (
    SELECT z.Id FROM (
        SELECT k.Id, k.pos, ROW_NUMBER() OVER (PARTITION BY k.Destination, k.ObjectType, k.RecordID ORDER BY k.pos) AS n
        FROM locked k) z
    WHERE z.pos = z.n
), leased AS (
    UPDATE _System_IntegrationOutbound AS t
    SET Status = 'processing', LeaseOwner = $5, LeaseExpiresDate = $6,
    Attempt = t.Attempt + 1, LastModifiedDate = $2
    FROM ok AS c
    WHERE t.Id = c.Id AND ((t.Status = 'pending' AND t.NextAttemptDate <= $2)
      OR (t.Status = 'processing' AND t.LeaseExpiresDate < $2))
    RETURNING t.*
), kept AS (
    UPDATE hubsync_lane_outbound AS n
    SET DueDate = GREATEST(n.DueDate, $6 + interval '1 microsecond')
    WHERE n.LaneKey = ANY (ARRAY(SELECT (length(r.Destination)::text || ':' || length(r.ObjectType)::text || ':' || r.Destination || r.ObjectType || r.RecordID) FROM leased r))
)
SELECT r.* FROM leased r;
END
$$;

CREATE OR REPLACE FUNCTION hubsync_claim_internal(p_now timestamptz, p_limit integer, p_max_per_record integer, p_owner text, p_lease_expires timestamptz)
    RETURNS SETOF _System_OutboxEvent LANGUAGE plpgsql VOLATILE
    SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
    SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
    SET plan_cache_mode = force_generic_plan SET hubsync.lanes_kept = 'on'
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
    SELECT v.* FROM evs v JOIN _System_OutboxEvent t ON t.Id = v.Id
    WHERE ((t.Status = 'pending' AND t.NextAttemptDate <= $1)
      OR (t.Status = 'processing' AND t.LeaseExpiresDate < $1)) OR t.Status NOT IN ('pending', 'processing')
    FOR UPDATE OF t SKIP LOCKED
), ok AS MATERIALIZED (
    SELECT z.Id FROM (
        SELECT k.Id, k.pos, ROW_NUMBER() OVER (PARTITION BY k.ObjectType, k.RecordID ORDER BY k.pos) AS n
        FROM locked k) z
    WHERE z.pos = z.n
), leased AS (
    UPDATE _System_OutboxEvent AS t
    SET Status = 'processing', LeaseOwner = $4, LeaseExpiresDate = $5,
    Attempt = t.Attempt + 1, LastModifiedDate = $1
    FROM ok AS c
    WHERE t.Id = c.Id AND ((t.Status = 'pending' AND t.NextAttemptDate <= $1)
      OR (t.Status = 'processing' AND t.LeaseExpiresDate < $1))
    RETURNING t.*
), kept AS (
    UPDATE hubsync_lane_internal AS n
    SET DueDate = GREATEST(n.DueDate, $5 + interval '1 microsecond')
    WHERE n.LaneKey = ANY (ARRAY(SELECT (length(r.ObjectType)::text || ':' || r.ObjectType || r.RecordID) FROM leased r))
)
SELECT r.* FROM leased r;
END
$$;
