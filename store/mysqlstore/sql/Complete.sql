UPDATE {{.Table}} t JOIN {{template "ids"}} ON t.Id = j.Id
SET t.Status = 'processed', t.ProcessedDate = @now, t.LeaseExpiresDate = NULL, t.LastModifiedDate = @now
WHERE t.Status = 'processing'
