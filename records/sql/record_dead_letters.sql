-- The dead letters of a record, in every destination's queue
-- (recordTx.supersede): a source's change deleted the record, so they are
-- re-queued for the outbound worker to resolve. One range of
-- idx_outbound_record. Parameters: object type, id.
SELECT ID FROM _System_IntegrationOutbound
WHERE ObjectType = ? AND RecordID = ? AND Status = 'failed'
