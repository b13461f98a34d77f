UPDATE {{.Table}}
SET Status = 'pending', RetryCount = 0, NextAttemptDate = @now, LeaseOwner = NULL, LeaseExpiresDate = NULL,
    LastModifiedDate = @now
WHERE Status = 'failed' AND Id IN (SELECT value FROM json_each(@ids))
