UPDATE {{.Table}} AS t
SET Status = 'processed', ProcessedDate = @now, LeaseExpiresDate = NULL, LastModifiedDate = @now
FROM {{template "leases"}}
WHERE t.Id = l.id AND t.Attempt = l.attempt AND t.Status = 'processing'
RETURNING t.Id
