-- The reconciliation sweep's re-publish: a new generation (a new
-- deduplication id) for an unfinished event whose message went out at or
-- before the cutoff. Idempotent: a second sweep finds it unpublished. Args:
-- id, cutoff.
UPDATE _System_IntegrationOutbound
SET PublishStatus = NULL, PublishGeneration = PublishGeneration + 1, PublishNextDate = NULL
WHERE Id = ? AND Status IN ('pending', 'processing') AND PublishStatus = 'published' AND PublishedDate <= ?
