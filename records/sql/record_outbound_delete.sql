-- Whether the application's deletion of a record was queued for a
-- destination (an outbound delete event, in any state): a record deleted by
-- that destination's own change has none. One range of idx_outbound_record.
SELECT 1 FROM _System_IntegrationOutbound
WHERE ObjectType = ? AND RecordID = ? AND Destination = ? AND EventType = 'delete'
LIMIT 1
