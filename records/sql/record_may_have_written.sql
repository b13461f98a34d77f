-- Whether a write of a record to a destination that may have reached it is
-- unfinished (recordTx.MayHaveWritten): an unfinished outbound event of the
-- record that a worker claimed at least once (Attempt counts claims). One
-- range of index idx_outbound_open. Parameters: destination, object type, id.
SELECT EXISTS (
    SELECT 1 FROM _System_IntegrationOutbound
    WHERE Destination = ? AND ObjectType = ? AND RecordID = ? AND Status IN ('pending', 'processing') AND Attempt > 0
)
