-- Queries of the SQLite backend. internal/sqlq renders this file once per queue
-- with text/template ({{.Table}}, {{.Key}}, the record-key columns) and binds
-- the @named parameters. Timestamps are INTEGER unix microseconds (UTC); lists
-- of ids and leases arrive as one JSON array parameter.
--
-- SQLite has one writer at a time, so a claim is a single UPDATE … RETURNING.

{{define "keyed"}}{{if .Key}}e.{{.Key}} = @key AND {{end}}{{end}}

{{/* A candidate e is the head of its record: no earlier event of its record is
     unfinished, and no other one holds a live lease. So a record has at most one
     event out at a time, and its events come out in creation order. Failed and
     processed events do not block. */}}
{{define "unblocked"}}NOT EXISTS (
        SELECT 1 FROM {{.Table}} x
        WHERE {{same . "x" "e"}} AND x.Id <> e.Id AND x.Status IN ('pending', 'processing')
          AND (x.CreatedDate < e.CreatedDate OR (x.CreatedDate = e.CreatedDate AND x.Id < e.Id)
            OR (x.Status = 'processing' AND x.LeaseExpiresDate >= @now)))
{{end}}

{{/* The due events of one key in claim order: pending ones whose time has come
     and processing ones whose lease expired, each from its index range. */}}
{{define "due"}}p AS MATERIALIZED (
    SELECT e.Id, e.CreatedDate FROM {{.Table}} e
    WHERE {{template "keyed" .}}e.Status = 'pending' AND e.NextAttemptDate <= @now
      AND {{template "unblocked" .}}
    ORDER BY e.CreatedDate, e.Id LIMIT @limit
), xp AS MATERIALIZED (
    SELECT e.Id, e.CreatedDate FROM {{.Table}} e
    WHERE {{template "keyed" .}}e.Status = 'processing' AND e.LeaseExpiresDate < @now
      AND {{template "unblocked" .}}
    ORDER BY e.CreatedDate, e.Id LIMIT @limit
), cand AS MATERIALIZED (
    SELECT Id FROM (SELECT Id, CreatedDate FROM p UNION ALL SELECT Id, CreatedDate FROM xp)
    ORDER BY CreatedDate, Id LIMIT @limit
){{end}}

{{/* The followers of each head in cand: the later unfinished events of its
     record, in order, while they are due, at most @max_per_record - 1 of them.
     SQLite has one writer and the claim is one statement, so nothing can change
     between choosing the heads and leasing their followers. CROSS JOIN and
     INDEXED BY pin the plan heads → record → its open events (the planner
     otherwise starts from every pending row). */}}
{{define "followers"}}fol AS MATERIALIZED (
    SELECT Id FROM (
        SELECT f.Id,
            ROW_NUMBER() OVER w AS n,
            SUM(CASE WHEN (f.Status = 'pending' AND f.NextAttemptDate <= @now)
                       OR (f.Status = 'processing' AND f.LeaseExpiresDate < @now)
                     THEN 0 ELSE 1 END) OVER w AS blocked
        FROM cand c CROSS JOIN {{.Table}} h ON h.Id = c.Id
        CROSS JOIN {{.Table}} f INDEXED BY {{.OpenIndex}} ON {{same . "f" "h"}} AND f.Status IN ('pending', 'processing')
            AND (f.CreatedDate > h.CreatedDate OR (f.CreatedDate = h.CreatedDate AND f.Id > h.Id))
        WINDOW w AS (PARTITION BY h.Id ORDER BY f.CreatedDate, f.Id)
    )
    WHERE blocked = 0 AND n < @max_per_record
){{end}}

{{define "lease"}}UPDATE {{.Table}} AS t
SET Status = 'processing', LeaseOwner = @owner, LeaseExpiresDate = @lease_expires,
    Attempt = t.Attempt + 1, LastModifiedDate = @now
WHERE t.Id IN (SELECT Id FROM cand{{if .Followers}} UNION ALL SELECT Id FROM fol{{end}})
RETURNING {{cols . ""}}{{end}}

-- name: Insert
{{if eq .Dir "inbound"}}
INSERT INTO _System_IntegrationInbound (Id, Source, ExternalID, ObjectType, EventType, Payload, RawPayload,
    IdempotencyKey, Status, RetryCount, Attempt, CreatedDate, LastModifiedDate, NextAttemptDate)
VALUES (@id, @source, @external_id, @object_type, @event_type, @payload, @raw_payload,
    @idempotency_key, 'pending', 0, 0, @created, @now, @created)
ON CONFLICT (IdempotencyKey) DO NOTHING
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
SELECT Id FROM _System_IntegrationInbound WHERE IdempotencyKey = @idempotency_key
{{end}}

-- name: Get
SELECT {{cols . ""}} FROM {{.Table}} WHERE Id = @id

-- name: Pending
WITH {{template "due" .}}
SELECT {{cols . ""}} FROM {{.Table}} WHERE Id IN (SELECT Id FROM cand)

-- name: Claim
WITH {{template "due" .}}, {{template "followers" .}}
{{template "lease" withFollowers .}}

-- name: ClaimIDs
WITH cand AS MATERIALIZED (
    SELECT e.Id FROM {{.Table}} e
    WHERE e.Id IN (SELECT value FROM json_each(@ids))
      AND ((e.Status = 'pending' AND e.NextAttemptDate <= @now)
        OR (e.Status = 'processing' AND e.LeaseExpiresDate < @now))
      AND {{template "unblocked" .}}
)
{{template "lease" .}}

-- Batch lease changes look each lease up by primary key (the unary + keeps the
-- planner from walking every processing row instead).

-- name: Complete
UPDATE {{.Table}} AS t
SET Status = 'processed', ProcessedDate = @now, LeaseExpiresDate = NULL, LastModifiedDate = @now
FROM (SELECT json_extract(value, '$.id') AS lid, json_extract(value, '$.attempt') AS lattempt
      FROM json_each(@leases)) AS l
WHERE t.Id = l.lid AND t.Attempt = l.lattempt AND +t.Status = 'processing'
RETURNING Id

-- name: Release
UPDATE {{.Table}} AS t
SET Status = 'pending', NextAttemptDate = @next, LeaseOwner = NULL, LeaseExpiresDate = NULL, LastModifiedDate = @now
FROM (SELECT json_extract(value, '$.id') AS lid, json_extract(value, '$.attempt') AS lattempt
      FROM json_each(@leases)) AS l
WHERE t.Id = l.lid AND t.Attempt = l.lattempt AND +t.Status = 'processing'
RETURNING Id

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
DELETE FROM {{.Table}} WHERE Id IN (
    SELECT Id FROM {{.Table}} WHERE Status = 'processed' AND ProcessedDate < @cutoff LIMIT @batch)

-- name: DeadLetters
SELECT {{cols . ""}} FROM {{.Table}}
WHERE Status = 'failed'{{if .Key}} AND (@key = '' OR {{.Key}} = @key){{end}} AND Id > @after
ORDER BY Id LIMIT @limit

-- name: Requeue
UPDATE {{.Table}}
SET Status = 'pending', RetryCount = 0, NextAttemptDate = @now, LeaseOwner = NULL, LeaseExpiresDate = NULL,
    LastModifiedDate = @now
WHERE Status = 'failed' AND Id IN (SELECT value FROM json_each(@ids))

-- name: RequeueAll
UPDATE {{.Table}}
SET Status = 'pending', RetryCount = 0, NextAttemptDate = @now, LeaseOwner = NULL, LeaseExpiresDate = NULL,
    LastModifiedDate = @now
WHERE Status = 'failed'{{if .Key}} AND {{.Key}} = @key{{end}}

-- name: Stats
SELECT {{if .Key}}{{.Key}}{{else}}''{{end}}, Status, COUNT(*), MIN(CreatedDate)
FROM {{.Table}} GROUP BY 1, 2 ORDER BY 1, 2
