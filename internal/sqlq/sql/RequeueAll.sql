UPDATE {{.Table}}
SET Status = 'pending', RetryCount = 0, NextAttemptDate = @now, LeaseOwner = NULL, LeaseExpiresDate = NULL,
    LastModifiedDate = @now
WHERE Status = 'failed'{{if .Key}} AND {{.Key}} = @key{{end}}
