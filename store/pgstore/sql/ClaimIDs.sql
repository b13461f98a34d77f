WITH cand AS MATERIALIZED (
    SELECT e.Id FROM {{.Table}} e
    WHERE e.Id IN (SELECT jsonb_array_elements_text(@ids::jsonb))
      AND ((e.Status = 'pending' AND e.NextAttemptDate <= @now)
        OR (e.Status = 'processing' AND e.LeaseExpiresDate < @now))
      AND {{template "head" .}}
    FOR UPDATE SKIP LOCKED
)
UPDATE {{.Table}} AS t
{{template "leaseset"}}
FROM cand AS c
WHERE t.Id = c.Id AND {{template "claimable"}}
RETURNING {{cols . "t"}}
