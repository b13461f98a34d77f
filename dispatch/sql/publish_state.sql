SELECT Id, PublishAttempts, PublishGeneration, COALESCE(PublishStatus, ''), COALESCE(QStashMessageID, ''), PublishedDate
FROM _System_IntegrationOutbound WHERE Id = ?
