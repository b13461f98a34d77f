-- Queries of the MySQL/MariaDB backend. internal/sqlq renders this file once per
-- queue with text/template ({{.Table}}, {{.Key}}, the record-key columns) and
-- binds the @named parameters as ?. Lists of ids and leases arrive as one JSON
-- array parameter, unpacked with JSON_TABLE (MySQL 8.0.4+, MariaDB 10.6+).
--
-- MySQL has no UPDATE … RETURNING, so a claim is a short read-committed
-- transaction: ClaimLockPending and ClaimLockExpired lock the due events of one
-- key with FOR UPDATE SKIP LOCKED, ClaimUpdate leases them and SelectIDs reads
-- them back.

{{define "keyed"}}{{if .Key}}e.{{.Key}} = @key AND {{end}}{{end}}

{{/* A candidate e is the head of its record: no earlier event of its record is
     unfinished, and no other one holds a live lease (see the PostgreSQL file). */}}
{{define "unblocked"}}NOT EXISTS (
        SELECT 1 FROM {{.Table}} x
        WHERE {{same . "x" "e"}} AND x.Id <> e.Id AND x.Status IN ('pending', 'processing')
          AND (x.CreatedDate < e.CreatedDate OR (x.CreatedDate = e.CreatedDate AND x.Id < e.Id)
            OR (x.Status = 'processing' AND x.LeaseExpiresDate >= @now)))
{{end}}

{{define "pending"}}SELECT e.Id, e.CreatedDate FROM {{.Table}} e
WHERE {{template "keyed" .}}e.Status = 'pending' AND e.NextAttemptDate <= @now
  AND {{template "unblocked" .}}
ORDER BY e.CreatedDate, e.Id LIMIT @limit {{.Lock}}{{end}}

{{define "expired"}}SELECT e.Id, e.CreatedDate FROM {{.Table}} e
WHERE {{template "keyed" .}}e.Status = 'processing' AND e.LeaseExpiresDate < @now
  AND {{template "unblocked" .}}
ORDER BY e.CreatedDate, e.Id LIMIT @limit {{.Lock}}{{end}}

{{define "ids"}}JSON_TABLE(@ids, '$[*]' COLUMNS (Id VARCHAR(255) CHARACTER SET utf8mb4 PATH '$')) AS j{{end}}

-- name: Insert
{{if eq .Dir "inbound"}}
INSERT IGNORE INTO _System_IntegrationInbound (Id, Source, ExternalID, ObjectType, EventType, Payload, RawPayload,
    IdempotencyKey, Status, RetryCount, Attempt, CreatedDate, LastModifiedDate, NextAttemptDate)
VALUES (@id, @source, @external_id, @object_type, @event_type, @payload, @raw_payload,
    @idempotency_key, 'pending', 0, 0, @created, @now, @created)
{{else if eq .Dir "outbound"}}
INSERT INTO _System_IntegrationOutbound (Id, Destination, ObjectType, RecordID, EventType, Payload, OldPayload,
    Status, RetryCount, Attempt, CreatedDate, LastModifiedDate, NextAttemptDate)
VALUES (@id, @destination, @object_type, @record_id, @event_type, @payload, @old_payload,
    'pending', 0, 0, @created, @now, @created)
{{else}}
INSERT INTO _System_OutboxEvent (Id, EventType, ObjectType, RecordID, Payload, Metadata,
    Status, RetryCount, Attempt, CreatedDate, LastModifiedDate, NextAttemptDate)
VALUES (@id, @event_type, @object_type, @record_id, @payload, @metadata,
    'pending', 0, 0, @created, @now, @created)
{{end}}

-- name: IDByIdempotencyKey
{{if eq .Dir "inbound"}}
-- a locking read sees the latest commit even inside a repeatable-read snapshot
SELECT Id FROM _System_IntegrationInbound WHERE IdempotencyKey = @idempotency_key LOCK IN SHARE MODE
{{end}}

-- name: Get
SELECT {{cols . ""}} FROM {{.Table}} WHERE Id = @id

-- name: Pending
SELECT {{cols . "t"}} FROM {{.Table}} t JOIN (
    SELECT Id FROM (({{template "pending" .}}) UNION ALL ({{template "expired" .}})) u
    ORDER BY CreatedDate, Id LIMIT @limit
) c ON c.Id = t.Id

-- name: ClaimLockPending
{{template "pending" locked .}}

-- name: ClaimLockExpired
{{template "expired" locked .}}

-- name: ClaimLockIDs
SELECT e.Id, e.CreatedDate FROM {{.Table}} e
WHERE e.Id IN (SELECT j.Id FROM {{template "ids"}})
  AND ((e.Status = 'pending' AND e.NextAttemptDate <= @now)
    OR (e.Status = 'processing' AND e.LeaseExpiresDate < @now))
  AND {{template "unblocked" .}}
FOR UPDATE SKIP LOCKED

-- name: ClaimLockFollowers
-- The later unfinished events of the records of the heads in ids (already locked
-- by this transaction), each with its head and whether it is due; the engine
-- keeps, per head, the ones before the first that is not due. They are locked
-- (waiting, not skipping: a skipped row would hide a gap in the record's order)
-- and read as last committed, as locking reads are. No other claimer waits for
-- them: while a head is unfinished no follower of it is a head, so no other
-- claim selects one, and only this transaction holds the head.
SELECT STRAIGHT_JOIN f.Id, f.CreatedDate, h.Id,
    CASE WHEN (f.Status = 'pending' AND f.NextAttemptDate <= @now)
           OR (f.Status = 'processing' AND f.LeaseExpiresDate < @now) THEN 1 ELSE 0 END
FROM {{template "ids"}} JOIN {{.Table}} h ON h.Id = j.Id
JOIN {{.Table}} f FORCE INDEX ({{.OpenIndex}}) ON {{same . "f" "h"}} AND f.Status IN ('pending', 'processing')
    AND (f.CreatedDate > h.CreatedDate OR (f.CreatedDate = h.CreatedDate AND f.Id > h.Id))
ORDER BY h.Id, f.CreatedDate, f.Id
FOR UPDATE

-- name: ClaimUpdate
UPDATE {{.Table}} t JOIN {{template "ids"}} ON t.Id = j.Id
SET t.Status = 'processing', t.LeaseOwner = @owner, t.LeaseExpiresDate = @lease_expires,
    t.Attempt = t.Attempt + 1, t.LastModifiedDate = @now

-- name: SelectIDs
SELECT {{cols . "t"}} FROM {{.Table}} t JOIN {{template "ids"}} ON t.Id = j.Id

-- name: LockLeases
SELECT t.Id FROM {{.Table}} t
JOIN JSON_TABLE(@leases, '$[*]' COLUMNS (Id VARCHAR(255) CHARACTER SET utf8mb4 PATH '$.id', Attempt INT PATH '$.attempt')) AS l
  ON t.Id = l.Id AND t.Attempt = l.Attempt
WHERE t.Status = 'processing'
FOR UPDATE

-- name: Complete
UPDATE {{.Table}} t JOIN {{template "ids"}} ON t.Id = j.Id
SET t.Status = 'processed', t.ProcessedDate = @now, t.LeaseExpiresDate = NULL, t.LastModifiedDate = @now
WHERE t.Status = 'processing'

-- name: Release
UPDATE {{.Table}} t JOIN {{template "ids"}} ON t.Id = j.Id
SET t.Status = 'pending', t.NextAttemptDate = @next, t.LeaseOwner = NULL, t.LeaseExpiresDate = NULL,
    t.LastModifiedDate = @now
WHERE t.Status = 'processing'

-- name: Fail
UPDATE {{.Table}}
SET Status = 'failed', ErrorMessage = @error, LeaseExpiresDate = NULL, LastModifiedDate = @now
WHERE Id = @id AND Attempt = @attempt AND Status = 'processing'

-- name: RetryCount
SELECT RetryCount FROM {{.Table}} WHERE Id = @id AND Attempt = @attempt AND Status = 'processing'

-- name: Retry
UPDATE {{.Table}}
SET Status = @status, RetryCount = RetryCount + 1, ErrorMessage = @error, NextAttemptDate = @next,
    LeaseOwner = NULL, LeaseExpiresDate = NULL, LastModifiedDate = @now
WHERE Id = @id AND Attempt = @attempt AND Status = 'processing' AND RetryCount = @retry_count

-- name: Cleanup
DELETE FROM {{.Table}} WHERE Status = 'processed' AND ProcessedDate < @cutoff LIMIT @batch

-- name: DeadLetters
SELECT {{cols . ""}} FROM {{.Table}}
WHERE Status = 'failed'{{if .Key}} AND (@key = '' OR {{.Key}} = @key){{end}} AND Id > @after
ORDER BY Id LIMIT @limit

-- name: Requeue
UPDATE {{.Table}} t JOIN {{template "ids"}} ON t.Id = j.Id
SET t.Status = 'pending', t.RetryCount = 0, t.NextAttemptDate = @now, t.LeaseOwner = NULL,
    t.LeaseExpiresDate = NULL, t.LastModifiedDate = @now
WHERE t.Status = 'failed'

-- name: RequeueAll
UPDATE {{.Table}}
SET Status = 'pending', RetryCount = 0, NextAttemptDate = @now, LeaseOwner = NULL, LeaseExpiresDate = NULL,
    LastModifiedDate = @now
WHERE Status = 'failed'{{if .Key}} AND {{.Key}} = @key{{end}}

-- name: Stats
SELECT {{if .Key}}{{.Key}}{{else}}''{{end}}, Status, COUNT(*), MIN(CreatedDate)
FROM {{.Table}} GROUP BY 1, 2 ORDER BY 1, 2
