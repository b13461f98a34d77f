-- A claim checks that a candidate's record holds no live lease. With claims
-- that hand out a record's followers, and hot records with long backlogs, that
-- check should be an index range over the record's processing events only
-- (the PostgreSQL migration of the same number; kept in step on every dialect).
-- MySQL has no partial indexes; Status in the key selects the processing ones.
CREATE INDEX idx_inbound_lease ON _System_IntegrationInbound (Source, ExternalID, Status, LeaseExpiresDate);
CREATE INDEX idx_outbound_lease ON _System_IntegrationOutbound (Destination, ObjectType, RecordID, Status, LeaseExpiresDate);
CREATE INDEX idx_outboxevent_lease ON _System_OutboxEvent (ObjectType, RecordID, Status, LeaseExpiresDate);
