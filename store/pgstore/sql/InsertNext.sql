{{if ne .Dir "inbound"}}
-- Insert.sql of an event without an idempotency key that takes its sequence
-- from its record's counter in the same statement, as NextSeq.sql does (the
-- counter row stays locked until the transaction ends, so a record's
-- sequences follow the commit order of its transactions): one round trip
-- instead of two for each event a record write enqueues. A data-modifying
-- WITH runs once, however often the statement reads it.
WITH counter AS (
    INSERT INTO hubsync_record_seq (Queue, RecordKey, ObjectType, RecordID, Seq)
    VALUES (@queue, @record_key, @object_type, @record_id, 1)
    ON CONFLICT (Queue, RecordKey, ObjectType, RecordID) DO UPDATE SET Seq = hubsync_record_seq.Seq + 1
    RETURNING Seq
)
{{if eq .Dir "outbound"}}
INSERT INTO _System_IntegrationOutbound (Id, Destination, ObjectType, RecordID, EventType, Payload, OldPayload,
    Status, RetryCount, Attempt, Seq, Lane, CreatedDate, LastModifiedDate, NextAttemptDate)
VALUES (@id, @destination, @object_type, @record_id, @event_type, @payload, @old_payload,
    'pending', 0, 0, (SELECT Seq FROM counter), (SELECT Seq FROM counter), @created, @now, @created)
{{else}}
INSERT INTO _System_OutboxEvent (Id, EventType, ObjectType, RecordID, Payload, Metadata,
    Status, RetryCount, Attempt, Seq, Lane, CreatedDate, LastModifiedDate, NextAttemptDate)
VALUES (@id, @event_type, @object_type, @record_id, @payload, @metadata,
    'pending', 0, 0, (SELECT Seq FROM counter), (SELECT Seq FROM counter), @created, @now, @created)
{{end}}
{{end}}
