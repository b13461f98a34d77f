-- ClaimIDs (push dispatch) leases each named event that is its record's head
-- (template "head"), with up to @max_per_record - 1 of the record's due
-- followers, as Claim does: so a delivery that names a record's head pushes
-- that record's due changes together, coalesced, in Lane order. cand locks
-- the heads, skipping a head another transaction holds. evs walks each
-- head's later unfinished events in Lane order on the record's open index
-- (template "walk") while they are claimable (the first that is not, in backoff or leased,
-- stops the record), and lockprefix locks the prefix it can take. The UPDATE
-- re-checks each row (claimable) on its newest version. A named follower
-- is not a head while its head is unfinished, so it comes only with its head.
WITH cand AS MATERIALIZED (
    SELECT e.Id, e.Lane, {{tuple . "e"}} FROM {{.Table}} e
    WHERE e.Id IN (SELECT jsonb_array_elements_text(@ids::jsonb))
      AND ((e.Status = 'pending' AND e.NextAttemptDate <= @now)
        OR (e.Status = 'processing' AND e.LeaseExpiresDate < @now))
      AND {{template "head" .}}
    FOR UPDATE SKIP LOCKED
), evs AS MATERIALIZED (
    SELECT s.Id, s.pos, {{tuple . "c"}} FROM cand c
    CROSS JOIN LATERAL (
        {{template "walk"}}
        FROM {{.Table}} f
        WHERE {{same . "f" "c"}} AND f.Status IN ('pending', 'processing') AND f.Lane > c.Lane
        ORDER BY f.Lane LIMIT GREATEST(@max_per_record::int - 1, 0)
    ) s
    WHERE s.blocked = 0
), {{template "lockprefix" .}}
UPDATE {{.Table}} AS t
{{template "leaseset"}}
FROM (SELECT Id FROM cand UNION ALL SELECT Id FROM ok) AS c
WHERE t.Id = c.Id AND {{template "claimable"}}
RETURNING {{cols . "t"}}
