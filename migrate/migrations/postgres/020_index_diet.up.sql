-- Index diet for the queue tables (issue 16). A claim, a complete and a release
-- each change an event's Status, which every index predicate below names, so
-- none is a HOT update: each adds an entry to every index whose predicate the
-- new row version meets. Since record lanes (018, 019) the claim no longer
-- walks the backlog by (key, Status, CreatedDate), and these indexes served no
-- PostgreSQL query any more:
--   * idx_*_poll (001), superseded by idx_*_claim (003) long ago,
--   * idx_*_claim (003): the claim reads the lanes, then idx_*_open,
--   * idx_*_expiry (006): the lanes hold each lease's expiry, and the claim's
--     live-lease probe is idx_*_lease (009),
--   * idx_inbound_source (001): no query filters Source and ObjectType by date,
--   * idx_outboxevent_record (001): the internal queue's record reads are on
--     idx_outboxevent_open (the outbound and inbound record indexes stay: the
--     ops API lists a record's whole history with them).
-- What still needs an index gets a partial one, written only when an event
-- enters the state it holds, so a claim (pending -> processing) writes none:
--   * idx_*_processed: cleanup's deletes of processed events by ProcessedDate
--     (was idx_*_cleanup on every row),
--   * idx_*_failed: the dead-letter listing (by Id) and requeue by key (was a
--     range of idx_*_claim or idx_*_cleanup),
--   * idx_outbound_pending: the push dispatch's publish claim, which takes a
--     destination's pending events in (CreatedDate, Id) order (was
--     idx_outbound_claim).
-- store/pgstore/index_plan_test.go holds every hot or periodic query on these
-- tables to an index path. MySQL and SQLite keep their indexes: their claims
-- still use idx_*_claim.

CREATE INDEX idx_inbound_processed ON _System_IntegrationInbound (ProcessedDate) WHERE Status = 'processed';
CREATE INDEX idx_inbound_failed ON _System_IntegrationInbound (Id) WHERE Status = 'failed';
DROP INDEX idx_inbound_poll;
DROP INDEX idx_inbound_claim;
DROP INDEX idx_inbound_cleanup;
DROP INDEX idx_inbound_expiry;
DROP INDEX idx_inbound_source;

CREATE INDEX idx_outbound_processed ON _System_IntegrationOutbound (ProcessedDate) WHERE Status = 'processed';
CREATE INDEX idx_outbound_failed ON _System_IntegrationOutbound (Id) WHERE Status = 'failed';
CREATE INDEX idx_outbound_pending ON _System_IntegrationOutbound (Destination, CreatedDate, Id) WHERE Status = 'pending';
DROP INDEX idx_outbound_poll;
DROP INDEX idx_outbound_claim;
DROP INDEX idx_outbound_cleanup;
DROP INDEX idx_outbound_expiry;

CREATE INDEX idx_outboxevent_processed ON _System_OutboxEvent (ProcessedDate) WHERE Status = 'processed';
CREATE INDEX idx_outboxevent_failed ON _System_OutboxEvent (Id) WHERE Status = 'failed';
DROP INDEX idx_outboxevent_poll;
DROP INDEX idx_outboxevent_claim;
DROP INDEX idx_outboxevent_cleanup;
DROP INDEX idx_outboxevent_expiry;
DROP INDEX idx_outboxevent_record;
