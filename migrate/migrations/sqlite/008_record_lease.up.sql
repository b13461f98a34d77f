-- A claim checks that a candidate's record holds no live lease. With claims
-- that hand out a record's followers, and hot records with long backlogs, that
-- check must be an index probe over the record's processing events only, not a
-- walk over its unfinished ones (store/pgstore/queries.sql, template "head"; kept in step on every dialect).
CREATE INDEX idx_inbound_lease ON _System_IntegrationInbound (Source, ExternalID, LeaseExpiresDate)
    WHERE Status = 'processing';
CREATE INDEX idx_outbound_lease ON _System_IntegrationOutbound (Destination, ObjectType, RecordID, LeaseExpiresDate)
    WHERE Status = 'processing';
CREATE INDEX idx_outboxevent_lease ON _System_OutboxEvent (ObjectType, RecordID, LeaseExpiresDate)
    WHERE Status = 'processing';
