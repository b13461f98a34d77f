-- A claim also takes processing events whose lease expired. Claims now hand out
-- a record's followers with its head, so many rows can be processing at once;
-- these partial indexes let that part of a claim read only expired leases
-- instead of walking every live one.
CREATE INDEX idx_inbound_expiry ON _System_IntegrationInbound (Source, LeaseExpiresDate) WHERE Status = 'processing';
CREATE INDEX idx_outbound_expiry ON _System_IntegrationOutbound (Destination, LeaseExpiresDate) WHERE Status = 'processing';
CREATE INDEX idx_outboxevent_expiry ON _System_OutboxEvent (LeaseExpiresDate) WHERE Status = 'processing';
