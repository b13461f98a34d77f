UPDATE {{.Table}} AS t
SET Status = 'pending', NextAttemptDate = @next, LeaseOwner = NULL, LeaseExpiresDate = NULL, LastModifiedDate = @now
FROM {{template "leases"}}
WHERE t.Id = l.id AND t.Attempt = l.attempt AND t.Status = 'processing'
RETURNING t.Id
