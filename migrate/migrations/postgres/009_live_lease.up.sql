-- A claim's lease probe (store/pgstore/queries.sql, template "head") asks whether
-- a record has an event with a live lease. Only processing events have a
-- LeaseExpiresDate (Complete, Release, Fail and Retry clear it), so the probe
-- tests LeaseExpiresDate alone, and these indexes are partial on it instead of
-- on Status = 'processing' (008): a probe that names Status also matches the
-- 006 expiry indexes, which the planner may take on a fresh backlog's statistics
-- and which hold every live lease of a key, not of one record.
DROP INDEX idx_inbound_lease;
CREATE INDEX idx_inbound_lease ON _System_IntegrationInbound (Source, ExternalID, LeaseExpiresDate)
    WHERE LeaseExpiresDate IS NOT NULL;
DROP INDEX idx_outbound_lease;
CREATE INDEX idx_outbound_lease ON _System_IntegrationOutbound (Destination, ObjectType, RecordID, LeaseExpiresDate)
    WHERE LeaseExpiresDate IS NOT NULL;
DROP INDEX idx_outboxevent_lease;
CREATE INDEX idx_outboxevent_lease ON _System_OutboxEvent (ObjectType, RecordID, LeaseExpiresDate)
    WHERE LeaseExpiresDate IS NOT NULL;
