-- Whether a record has a write to a destination queued or in flight (an
-- unfinished outbound event): one range of index idx_outbound_open.
SELECT 1 FROM _System_IntegrationOutbound
WHERE Destination = ? AND ObjectType = ? AND RecordID = ? AND Status IN ('pending', 'processing')
LIMIT 1
