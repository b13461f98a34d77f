SELECT e.Id, e.CreatedDate FROM {{.Table}} e
WHERE e.Id IN (SELECT j.Id FROM {{template "ids"}})
  AND ((e.Status = 'pending' AND e.NextAttemptDate <= @now)
    OR (e.Status = 'processing' AND e.LeaseExpiresDate < @now))
  AND {{template "unblocked" .}}
FOR UPDATE SKIP LOCKED
