UPDATE {{.Table}}
SET Status = @status, RetryCount = RetryCount + 1, ErrorMessage = @error, NextAttemptDate = @next,
    LeaseOwner = NULL, LeaseExpiresDate = NULL, LastModifiedDate = @now
WHERE Id = @id AND Attempt = @attempt AND Status = 'processing' AND RetryCount = @retry_count
