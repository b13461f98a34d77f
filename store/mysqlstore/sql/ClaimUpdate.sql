UPDATE {{.Table}} t JOIN {{template "ids"}} ON t.Id = j.Id
SET t.Status = 'processing', t.LeaseOwner = @owner, t.LeaseExpiresDate = @lease_expires,
    t.Attempt = t.Attempt + 1, t.LastModifiedDate = @now
