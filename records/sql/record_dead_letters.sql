-- The dead letters of a record in one destination's queue
-- (recordTx.supersede): that destination's change deleted the record, so
-- they are re-queued for its outbound worker to resolve. One range of
-- idx_outbound_record. Parameters: destination, object type, id.
SELECT ID FROM _System_IntegrationOutbound
WHERE Destination = ? AND ObjectType = ? AND RecordID = ? AND Status = 'failed'
