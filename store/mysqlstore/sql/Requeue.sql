UPDATE {{.Table}} t JOIN {{template "ids"}} ON t.Id = j.Id
SET t.Status = 'pending', t.RetryCount = 0, t.NextAttemptDate = @now, t.LeaseOwner = NULL,
    t.LeaseExpiresDate = NULL, t.LastModifiedDate = @now
WHERE t.Status = 'failed'
