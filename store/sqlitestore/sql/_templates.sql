-- Template definitions of the SQLite backend's queries. Each sql/NAME.sql
-- beside this file overrides, or adds to, the shared internal/sqlq/sql/NAME.sql;
-- internal/sqlq renders every query once per queue with text/template
-- ({{.Table}}, {{.Key}}, the record-key columns) and binds its @named
-- parameters with internal/dialectsql.
-- Timestamps are INTEGER unix microseconds (UTC); lists of ids and leases arrive
-- as one JSON array parameter.
--
-- SQLite has one writer at a time, so a claim is a single UPDATE … RETURNING.

{{/* A candidate e is the head of its record: no earlier event of its record is
     unfinished, and no other one holds a live lease. So a record is out to at most
     one claim at a time (its head, with the followers that claim takes), and
     its events come out in Lane order (the database-assigned sequence). Failed and
     processed events do not block. */}}
{{define "unblocked"}}NOT EXISTS (
        SELECT 1 FROM {{.Table}} x
        WHERE {{same . "x" "e"}} AND x.Id <> e.Id AND x.Status IN ('pending', 'processing')
          AND (x.Lane < e.Lane OR (x.Status = 'processing' AND x.LeaseExpiresDate >= @now)))
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
            AND f.Lane > h.Lane
        WINDOW w AS (PARTITION BY h.Id ORDER BY f.Lane)
    )
    WHERE blocked = 0 AND n < @max_per_record
){{end}}

{{define "lease"}}UPDATE {{.Table}} AS t
SET Status = 'processing', LeaseOwner = @owner, LeaseExpiresDate = @lease_expires,
    Attempt = t.Attempt + 1, LastModifiedDate = @now
WHERE t.Id IN (SELECT Id FROM cand{{if .Followers}} UNION ALL SELECT Id FROM fol{{end}})
RETURNING {{cols . ""}}{{end}}

{{/* seqrecords selects NextSeqBatch's @records in their ord order (WHERE true
     lets the parser tell the upsert's ON CONFLICT from a join's ON). */}}
{{define "seqrecords"}}SELECT @queue, json_extract(r.value, '$.record_key'), json_extract(r.value, '$.object_type'),
    json_extract(r.value, '$.record_id'), json_extract(r.value, '$.n')
FROM json_each(@records) AS r WHERE true
ORDER BY json_extract(r.value, '$.ord'){{end}}
