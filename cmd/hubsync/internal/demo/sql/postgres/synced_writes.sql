-- Local record writes made by the inbound sync from a source (see ../synced_writes.sql).
SELECT ObjectType, RecordID FROM _System_OutboxEvent
WHERE Metadata->>'sync_source' = $1;
