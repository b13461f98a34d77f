{{if eq .Dir "inbound"}}
-- Inserts a batch in one statement (the receiver's group commit: one
-- statement per event took most of a batch's time). @events is a JSON array
-- of objects in batch order (ord); JSON documents arrive as text so RawPayload
-- keeps its exact text, and created as 'YYYY-MM-DD hh:mm:ss.ffffff' (UTC). An
-- event whose IdempotencyKey exists, or repeats an earlier one of the batch,
-- is skipped, as by Insert.sql; the caller reads the ids back
-- (IDsByIdempotencyKeys) when fewer rows than events were written.
INSERT IGNORE INTO _System_IntegrationInbound (Id, Source, ExternalID, ObjectType, EventType, Payload, RawPayload,
    IdempotencyKey, Status, RetryCount, Attempt, Seq, Lane, CreatedDate, LastModifiedDate, NextAttemptDate, ProcessedDate)
SELECT j.id, j.source, j.external_id, j.object_type, j.event_type, j.payload, j.raw_payload,
    j.idempotency_key, j.status, 0, 0, j.seq, j.seq, j.created, @now, j.created,
    CASE WHEN j.status = 'processed' THEN @now END
FROM JSON_TABLE(@events, '$[*]' COLUMNS (
    ord INT PATH '$.ord',
    id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$.id',
    source VARCHAR(50) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$.source',
    external_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$.external_id',
    object_type VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$.object_type',
    event_type VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$.event_type',
    payload LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$.payload',
    raw_payload LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$.raw_payload',
    idempotency_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$.idempotency_key',
    status VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$.status',
    seq BIGINT PATH '$.seq',
    created DATETIME(6) PATH '$.created'
)) AS j
ORDER BY j.ord
{{end}}
