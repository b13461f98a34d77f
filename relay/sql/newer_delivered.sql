-- The highest Seq among a record's processed internal events later than the
-- given Seq (0 when none): a re-queued dead letter whose record has one was
-- superseded on the bus. Reads idx_outboxevent_record (ObjectType, RecordID).
SELECT COALESCE(MAX(Seq), 0) FROM _System_OutboxEvent
WHERE ObjectType = ? AND RecordID = ? AND Status = 'processed' AND Seq > ?
