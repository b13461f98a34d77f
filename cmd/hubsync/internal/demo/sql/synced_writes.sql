-- Local record writes made by the inbound sync from a source (internal events
-- whose metadata names the sync source).
SELECT ObjectType, RecordID FROM _System_OutboxEvent
WHERE json_extract(Metadata, '$.sync_source') = ?;
