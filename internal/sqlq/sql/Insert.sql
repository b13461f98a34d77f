{{if eq .Dir "inbound"}}
-- @status is 'pending', or 'processed' with @processed the store's now: an
-- event stored as already handled (an echo of our own write) for audit.
INSERT INTO _System_IntegrationInbound (Id, Source, ExternalID, ObjectType, EventType, Payload, RawPayload,
    IdempotencyKey, Status, RetryCount, Attempt, Seq, Lane, CreatedDate, LastModifiedDate, NextAttemptDate, ProcessedDate)
VALUES (@id, @source, @external_id, @object_type, @event_type, @payload, @raw_payload,
    @idempotency_key, @status, 0, 0, @seq, @seq, @created, @now, @created, @processed)
ON CONFLICT (IdempotencyKey) DO NOTHING
{{else if eq .Dir "outbound"}}
INSERT INTO _System_IntegrationOutbound (Id, Destination, ObjectType, RecordID, EventType, Payload, OldPayload,
    Status, RetryCount, Attempt, Seq, Lane, CreatedDate, LastModifiedDate, NextAttemptDate)
VALUES (@id, @destination, @object_type, @record_id, @event_type, @payload, @old_payload,
    'pending', 0, 0, @seq, @seq, @created, @now, @created)
{{else}}
INSERT INTO _System_OutboxEvent (Id, EventType, ObjectType, RecordID, Payload, Metadata,
    Status, RetryCount, Attempt, Seq, Lane, CreatedDate, LastModifiedDate, NextAttemptDate)
VALUES (@id, @event_type, @object_type, @record_id, @payload, @metadata,
    'pending', 0, 0, @seq, @seq, @created, @now, @created)
{{end}}
