-- Indexes for the store's claims (internal/sqlq, store/pgstore).
--
-- Claims read the due events of one key in (CreatedDate, Id) order, straight
-- from an index range with no sort.
CREATE INDEX idx_outbound_claim ON _System_IntegrationOutbound (Destination, Status, CreatedDate, Id);
CREATE INDEX idx_outboxevent_claim ON _System_OutboxEvent (Status, CreatedDate, Id);

-- A claim checks each candidate against the unfinished events of its record.
-- Partial indexes hold only those, so a record's finished history is never read.
CREATE INDEX idx_inbound_open ON _System_IntegrationInbound (Source, ExternalID, CreatedDate)
    WHERE Status IN ('pending', 'processing');
CREATE INDEX idx_outbound_open ON _System_IntegrationOutbound (Destination, ObjectType, RecordID, CreatedDate)
    WHERE Status IN ('pending', 'processing');
CREATE INDEX idx_outboxevent_open ON _System_OutboxEvent (ObjectType, RecordID, CreatedDate)
    WHERE Status IN ('pending', 'processing');

-- Cleanup deletes processed events by ProcessedDate.
CREATE INDEX idx_inbound_cleanup ON _System_IntegrationInbound (Status, ProcessedDate);
CREATE INDEX idx_outbound_cleanup ON _System_IntegrationOutbound (Status, ProcessedDate);
CREATE INDEX idx_outboxevent_cleanup ON _System_OutboxEvent (Status, ProcessedDate);
