{{if eq .Dir "inbound"}}
-- Inserts a batch in one statement. Each column arrives as one array
-- parameter (@ids, @sources, …), element i being event i in batch order;
-- pgx sends them in PostgreSQL's binary array format, so a payload's text is
-- neither escaped by the engine nor parsed as part of a larger document, and
-- RawPayload keeps its exact text. Returns, per event, its index in the
-- batch (from 0; WITH ORDINALITY counts from 1) and the id inserted, or else
-- the id of an existing event with the same key (NULL when that event is not
-- in this statement's snapshot: a concurrent insert, or an earlier event of
-- this same batch). An event whose status is 'processed' is stored processed
-- at @now (see the shared Insert.sql).
WITH input AS (
    SELECT * FROM unnest(@ids::text[], @sources::text[], @external_ids::text[], @object_types::text[],
        @event_types::text[], @payloads::text[], @raw_payloads::text[], @idempotency_keys::text[],
        @statuses::text[], @seqs::bigint[], @createds::timestamptz[])
        WITH ORDINALITY AS e(id, source, external_id, object_type, event_type, payload, raw_payload,
        idempotency_key, status, seq, created, ord)
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
SELECT i.ord - 1, COALESCE(ins.Id, x.Id, ''), ins.Id IS NOT NULL
FROM input i
LEFT JOIN ins ON ins.Id = i.id
LEFT JOIN _System_IntegrationInbound x ON ins.Id IS NULL AND x.IdempotencyKey = i.idempotency_key
ORDER BY i.ord
{{end}}
