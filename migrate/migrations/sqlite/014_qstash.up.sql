-- Push dispatch through QStash (HUBSYNC_DISPATCH=qstash, package dispatch).
-- The publisher's own state, beside the queue's lease columns, which it never
-- touches: an outbound event stays pending while its message is out, and the
-- signed worker endpoint claims it by id with the ordinary lease.
--   PublishStatus     NULL (to publish), 'publishing' (claimed by a publisher
--                     until PublishNextDate), 'published', 'publish_retry'
--                     (backing off until PublishNextDate)
--   PublishAttempts   publishes tried; fences a publisher's mark
--   PublishGeneration 0 for the first publish; the reconciliation sweep bumps
--                     it to publish again under a new deduplication id
--   PublishedLane     the event's Lane when it was published: a re-queued dead
--                     letter gets a new Lane, and is published again (under
--                     the next generation) without waiting for the sweep
ALTER TABLE _System_IntegrationOutbound ADD COLUMN PublishStatus TEXT;
ALTER TABLE _System_IntegrationOutbound ADD COLUMN PublishAttempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE _System_IntegrationOutbound ADD COLUMN PublishGeneration INTEGER NOT NULL DEFAULT 0;
ALTER TABLE _System_IntegrationOutbound ADD COLUMN PublishNextDate INTEGER;
ALTER TABLE _System_IntegrationOutbound ADD COLUMN PublishedDate INTEGER;
ALTER TABLE _System_IntegrationOutbound ADD COLUMN QStashMessageID TEXT;
ALTER TABLE _System_IntegrationOutbound ADD COLUMN PublishError TEXT;
ALTER TABLE _System_IntegrationOutbound ADD COLUMN PublishedLane INTEGER;
