SELECT Id FROM _System_IntegrationOutbound
WHERE Destination = ? AND Status = 'pending' AND NextAttemptDate <= ?
  AND (PublishStatus IS NULL OR (PublishStatus IN ('publishing', 'publish_retry') AND PublishNextDate <= ?))
ORDER BY CreatedDate, Id LIMIT ?
FOR UPDATE SKIP LOCKED
