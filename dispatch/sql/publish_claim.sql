-- The publisher's claim (SQLite: one writer, one statement). Args: lease
-- expiry, key, now, now, limit. Only pending, due events are published; one
-- already published waits for its delivery or for the reconciliation sweep.
UPDATE _System_IntegrationOutbound
SET PublishStatus = 'publishing', PublishAttempts = PublishAttempts + 1, PublishNextDate = ?
WHERE Id IN (
    SELECT Id FROM _System_IntegrationOutbound
    WHERE Destination = ? AND Status = 'pending' AND NextAttemptDate <= ?
      AND (PublishStatus IS NULL OR (PublishStatus IN ('publishing', 'publish_retry') AND PublishNextDate <= ?))
    ORDER BY CreatedDate, Id LIMIT ?
)
RETURNING Id, PublishAttempts, PublishGeneration
