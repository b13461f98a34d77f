{{if eq .Dir "inbound"}}
-- Inserts a batch in one statement. @events is a JSON array of objects, in batch
-- order (ord); JSON documents arrive as text so RawPayload keeps its exact text.
-- Returns, per event, the id inserted, or else the id of an existing event with
-- the same key (NULL when that event is not in this statement's snapshot: a
-- concurrent insert, or an earlier event of this same batch). An event whose
-- status is 'processed' is stored processed at @now (see the shared Insert.sql).
WITH input AS (
    SELECT * FROM jsonb_to_recordset(@events::jsonb) AS e(ord int, id text, source text, external_id text,
        object_type text, event_type text, payload text, raw_payload text, idempotency_key text,
        status text, seq bigint, created timestamptz)
), ins AS (
    INSERT INTO _System_IntegrationInbound (Id, Source, ExternalID, ObjectType, EventType, Payload, RawPayload,
        IdempotencyKey, Status, RetryCount, Attempt, Seq, Lane, CreatedDate, LastModifiedDate, NextAttemptDate, ProcessedDate)
    SELECT id, source, external_id, object_type, event_type, payload::jsonb, raw_payload::json,
        idempotency_key, status, 0, 0, seq, seq, created, @now, created,
        CASE WHEN status = 'processed' THEN @now::timestamptz END
    FROM input ORDER BY ord
    ON CONFLICT (IdempotencyKey) DO NOTHING
    RETURNING Id
)
SELECT i.ord, COALESCE(ins.Id, x.Id, ''), ins.Id IS NOT NULL
FROM input i
LEFT JOIN ins ON ins.Id = i.id
LEFT JOIN _System_IntegrationInbound x ON ins.Id IS NULL AND x.IdempotencyKey = i.idempotency_key
ORDER BY i.ord
{{end}}
