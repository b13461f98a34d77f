-- Indexes for the store's claims (internal/sqlq, store/mysqlstore).
--
-- Claims read the due events of one key in (CreatedDate, Id) order, straight
-- from an index range with no sort.
CREATE INDEX idx_outbound_claim ON _System_IntegrationOutbound (Destination, Status, CreatedDate, Id);
CREATE INDEX idx_outboxevent_claim ON _System_OutboxEvent (Status, CreatedDate, Id);

-- A claim checks each candidate against the other events of its record. MySQL
-- has no partial indexes; Status in the key lets the check skip finished ones.
CREATE INDEX idx_inbound_open ON _System_IntegrationInbound (Source, ExternalID, Status, CreatedDate);
CREATE INDEX idx_outbound_open ON _System_IntegrationOutbound (Destination, ObjectType, RecordID, Status, CreatedDate);
CREATE INDEX idx_outboxevent_open ON _System_OutboxEvent (ObjectType, RecordID, Status, CreatedDate);

-- Cleanup deletes processed events by ProcessedDate.
CREATE INDEX idx_inbound_cleanup ON _System_IntegrationInbound (Status, ProcessedDate);
CREATE INDEX idx_outbound_cleanup ON _System_IntegrationOutbound (Status, ProcessedDate);
CREATE INDEX idx_outboxevent_cleanup ON _System_OutboxEvent (Status, ProcessedDate);
