-- MySQL's second step of the claim, on a row publish_lock locked. Args:
-- lease expiry, id.
UPDATE _System_IntegrationOutbound
SET PublishStatus = 'publishing', PublishAttempts = PublishAttempts + 1, PublishNextDate = ?
WHERE Id = ?
