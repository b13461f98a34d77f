-- Args: next attempt, error, id, attempts.
UPDATE _System_IntegrationOutbound
SET PublishStatus = 'publish_retry', PublishNextDate = ?, PublishError = ?
WHERE Id = ? AND PublishStatus = 'publishing' AND PublishAttempts = ?
