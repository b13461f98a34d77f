-- Fenced by the claim's PublishAttempts: a publisher whose claim expired and
-- was taken over marks nothing. Args: message id, now, id, attempts.
UPDATE _System_IntegrationOutbound
SET PublishStatus = 'published', QStashMessageID = ?, PublishedDate = ?, PublishNextDate = NULL, PublishError = NULL,
    PublishedLane = Lane
WHERE Id = ? AND PublishStatus = 'publishing' AND PublishAttempts = ?
