WITH cand AS MATERIALIZED (
    SELECT e.Id FROM {{.Table}} e
    WHERE e.Id IN (SELECT value FROM json_each(@ids))
      AND ((e.Status = 'pending' AND e.NextAttemptDate <= @now)
        OR (e.Status = 'processing' AND e.LeaseExpiresDate < @now))
      AND {{template "unblocked" .}}
)
{{template "lease" .}}
