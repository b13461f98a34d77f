-- Local record writes made by the inbound sync from a source (see ../synced_writes.sql).
SELECT ObjectType, RecordID FROM _System_OutboxEvent
WHERE JSON_UNQUOTE(JSON_EXTRACT(Metadata, '$.sync_source')) = ?;
