UPDATE {{.Table}} t JOIN {{template "ids"}} ON t.Id = j.Id
SET t.Status = 'pending', t.NextAttemptDate = @next, t.LeaseOwner = NULL, t.LeaseExpiresDate = NULL,
    t.LastModifiedDate = @now
WHERE t.Status = 'processing'
