UPDATE {{.Table}}
SET Status = 'failed', ErrorMessage = @error, LeaseExpiresDate = NULL, LastModifiedDate = @now
WHERE Id = @id AND Attempt = @attempt AND Status = 'processing'
