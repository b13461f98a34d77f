-- A claim also takes processing events whose lease expired. Claims now hand out
-- a record's followers with its head, so many rows can be processing at once;
-- with these indexes that part of a claim reads (and, being a locking read,
-- locks) only expired leases instead of every live one, which deadlocked
-- concurrent claimers on MariaDB.
CREATE INDEX idx_inbound_expiry ON _System_IntegrationInbound (Source, Status, LeaseExpiresDate);
CREATE INDEX idx_outbound_expiry ON _System_IntegrationOutbound (Destination, Status, LeaseExpiresDate);
CREATE INDEX idx_outboxevent_expiry ON _System_OutboxEvent (Status, LeaseExpiresDate);
