WITH cand AS (
    SELECT Id FROM _System_IntegrationOutbound
    WHERE Destination = ? AND Status = 'pending' AND NextAttemptDate <= ?
      AND (PublishStatus IS NULL OR (PublishStatus IN ('publishing', 'publish_retry') AND PublishNextDate <= ?))
    ORDER BY CreatedDate, Id LIMIT ?
    FOR UPDATE SKIP LOCKED
)
UPDATE _System_IntegrationOutbound AS t
SET PublishStatus = 'publishing', PublishAttempts = t.PublishAttempts + 1, PublishNextDate = ?
FROM cand WHERE t.Id = cand.Id
RETURNING t.Id, t.PublishAttempts, t.PublishGeneration
