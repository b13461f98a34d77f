-- ClaimIDs (push dispatch) leases each named event that is its record's head,
-- with up to @max_per_record - 1 of its record's due followers, as Claim does
-- (templates "unblocked" and "followers"). A named follower is not a head while
-- its head is unfinished, so it comes only with its head.
WITH cand AS MATERIALIZED (
    SELECT e.Id FROM {{.Table}} e
    WHERE e.Id IN (SELECT value FROM json_each(@ids))
      AND ((e.Status = 'pending' AND e.NextAttemptDate <= @now)
        OR (e.Status = 'processing' AND e.LeaseExpiresDate < @now))
      AND {{template "unblocked" .}}
), {{template "followers" .}}
{{template "lease" withFollowers .}}
