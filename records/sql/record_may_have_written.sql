-- Whether a write of a record to a destination may have reached it without
-- its answer being recorded (recordTx.MayHaveWritten): an outbound event of
-- the record that a worker claimed at least once (Attempt counts claims) and
-- that is unfinished, or that was dead-lettered (a create retried after a lost
-- answer that HubSpot resolved, by email, to an object another record keeps
-- fails as a link conflict). Ranges of idx_outbound_open and
-- idx_outbound_record. Parameters: destination, object type, id.
SELECT EXISTS (
    SELECT 1 FROM _System_IntegrationOutbound
    WHERE Destination = ? AND ObjectType = ? AND RecordID = ? AND Status IN ('pending', 'processing', 'failed') AND Attempt > 0
)
