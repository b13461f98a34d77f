-- MySQL's second step of the claim, on a row publish_lock locked. Args:
-- lease expiry, id. MySQL assigns left to right, so the generation is
-- bumped while PublishStatus still holds its old value.
UPDATE _System_IntegrationOutbound
SET PublishGeneration = PublishGeneration + (CASE WHEN PublishStatus = 'published' THEN 1 ELSE 0 END),
    PublishStatus = 'publishing', PublishAttempts = PublishAttempts + 1, PublishNextDate = ?
WHERE Id = ?
