-- Returns one dead letter to pending at @lane, the end of its record's lane
-- (the engine's requeue takes @lane from the record's counter).
UPDATE {{.Table}}
SET Status = 'pending', RetryCount = 0, Lane = @lane, NextAttemptDate = @now, LeaseOwner = NULL,
    LeaseExpiresDate = NULL, LastModifiedDate = @now
WHERE Id = @id AND Status = 'failed'
