-- Template definitions of the PostgreSQL backend's queries. Each sql/NAME.sql
-- beside this file overrides, or adds to, the shared internal/sqlq/sql/NAME.sql;
-- internal/sqlq renders every query once per queue with text/template
-- ({{.Table}}, {{.Key}}, the record-key columns) and binds its @named
-- parameters with internal/dialectsql.
-- Lists of ids and leases arrive as one JSON array parameter.
--
-- A claim is one statement: CTEs pick the due heads of one key in order with
-- FOR UPDATE SKIP LOCKED, and their followers, and the UPDATE leases them.

{{/* A candidate e is the head of its record: the record's earliest unfinished
     event, and no other event of the record holds a live lease. So a record is
     out to at most one claim at a time (its head, with the followers that
     claim takes), in Lane order (the database-assigned sequence); failed and processed
     events do not block. Concurrent claimers cannot both take events of one
     record: a later event is not its record's first unfinished one in any
     snapshot, and the head itself is arbitrated by its row lock (a claimer that
     finds it claimed after the lock re-evaluates the row and drops it).

     Both checks are one index probe each, whatever the record's backlog: the
     first entry of the record's unfinished events (idx_*_open, in Lane
     order, migration 012), and the record's live leases (idx_*_lease, migrations 008, 009). The
     NOT EXISTS over earlier events that this replaced was planned on the
     record's whole history (idx_outbound_record) and cost each candidate time
     in proportion to its record's past and present events.

     The lease probe must stay a per-candidate probe of idx_*_lease on the whole
     record key. Only processing events have a LeaseExpiresDate (every other
     status change clears it), so it tests that alone: idx_*_lease (009) is
     partial on LeaseExpiresDate IS NOT NULL, and the expiry index of 006
     (Status = 'processing', without the record's columns) cannot serve it. With
     the Status test, on statistics taken while nothing was processing (a fresh
     backlog) the planner took that expiry index and read every live lease of the
     key for each candidate: with 4 concurrent claimers, 7,000 of a claim's
     10,000 buffers. OFFSET 0 keeps the NOT EXISTS a correlated subplan: as an
     anti join the planner would scan the live leases once and compare each
     candidate with all of them. */}}
{{define "head"}}e.Id = (
        SELECT x.Id FROM {{.Table}} x
        WHERE {{same . "x" "e"}} AND x.Status IN ('pending', 'processing')
        ORDER BY x.Lane LIMIT 1)
      AND NOT EXISTS (
        SELECT 1 FROM {{.Table}} x
        WHERE {{same . "x" "e"}} AND x.LeaseExpiresDate >= @now OFFSET 0)
{{end}}

{{/* The due events of one key in claim order: pending heads whose time has
     come and processing heads whose lease expired.

     Pending heads come from two places. p walks the first @window due pending
     events in CreatedDate order (win) and keeps the heads: enough when most
     events are heads. When records are hot, most pending events wait behind
     their record's head (or its lease), and a walk in CreatedDate order would
     pass thousands of them to find nothing: so when the window is full and p
     found fewer than @limit, and not because concurrent claimers hold the
     window's heads (wh counts them, unlocked), ps visits the records with
     unfinished events instead (a loose index scan over idx_*_open, one probe
     per record: recs) and takes their heads past the window. A claim thus
     reads at most @window events, or, when those are mostly not heads, one
     head per record with unfinished events; never a hot record's backlog.
     When the window is full of heads but concurrent claimers hold them, pd
     reads the next @window events in CreatedDate order, as p would have. */}}
{{define "due"}}win AS MATERIALIZED (
    SELECT COUNT(*) AS n, MAX(w.CreatedDate) AS upto FROM (
        SELECT e.CreatedDate FROM {{.Table}} e
        WHERE {{template "keyed" .}}e.Status = 'pending' AND e.NextAttemptDate <= @now
        ORDER BY e.CreatedDate, e.Id LIMIT @window) w
), p AS MATERIALIZED (
    SELECT e.Id, e.CreatedDate FROM (
        SELECT w.Id, w.CreatedDate FROM {{.Table}} w
        WHERE {{if .Key}}w.{{.Key}} = @key AND {{end}}w.Status = 'pending' AND w.NextAttemptDate <= @now
        ORDER BY w.CreatedDate, w.Id LIMIT @window) w
    JOIN {{.Table}} e ON e.Id = w.Id
    WHERE e.Status = 'pending' AND e.NextAttemptDate <= @now AND {{template "head" .}}
    ORDER BY w.CreatedDate, w.Id LIMIT @limit{{if .Lock}} FOR UPDATE OF e SKIP LOCKED{{end}}
), wh AS MATERIALIZED (
    SELECT COUNT(*) AS n FROM (
        SELECT e.Id FROM (
            SELECT w.Id FROM {{.Table}} w
            WHERE {{if .Key}}w.{{.Key}} = @key AND {{end}}w.Status = 'pending' AND w.NextAttemptDate <= @now
            ORDER BY w.CreatedDate, w.Id LIMIT @window) w
        JOIN {{.Table}} e ON e.Id = w.Id
        WHERE {{template "head" .}}
        LIMIT @limit) z
), pd AS MATERIALIZED (
    SELECT e.Id, e.CreatedDate FROM (
        SELECT w.Id, w.CreatedDate FROM {{.Table}} w
        WHERE {{if .Key}}w.{{.Key}} = @key AND {{end}}w.Status = 'pending' AND w.NextAttemptDate <= @now
          AND (SELECT n FROM win) >= @window AND (SELECT COUNT(*) FROM p) < @limit
          AND (SELECT n FROM wh) >= @limit
        ORDER BY w.CreatedDate, w.Id LIMIT @window OFFSET @window) w
    JOIN {{.Table}} e ON e.Id = w.Id
    WHERE e.Status = 'pending' AND e.NextAttemptDate <= @now AND {{template "head" .}}
    ORDER BY w.CreatedDate, w.Id LIMIT @limit{{if .Lock}} FOR UPDATE OF e SKIP LOCKED{{end}}
), recs AS (
    (SELECT {{tuple . "x"}} FROM {{.Table}} x
    WHERE {{if .Key}}x.{{.Key}} = @key AND {{end}}x.Status IN ('pending', 'processing')
      AND (SELECT n FROM win) >= @window AND (SELECT COUNT(*) FROM p) < @limit
      AND (SELECT n FROM wh) < @limit
    ORDER BY {{tuple . "x"}} LIMIT 1)
    UNION ALL
    SELECT nx.* FROM recs r CROSS JOIN LATERAL (
        SELECT {{tuple . "x"}} FROM {{.Table}} x
        WHERE x.Status IN ('pending', 'processing') AND ({{tuple . "x"}}) > ({{tuple . "r"}})
        ORDER BY {{tuple . "x"}} LIMIT 1) nx
    {{- if .Key}}
    -- The key is tested out here: inside, an equality on the index's first
    -- column would position the scan at the key's first entry and leave the row
    -- comparison to filter, a walk over every earlier record at each step.
    WHERE nx.{{.Key}} = @key{{end}}
), ps AS MATERIALIZED (
    SELECT e.Id, e.CreatedDate FROM recs r
    CROSS JOIN LATERAL (
        SELECT x.Id FROM {{.Table}} x
        WHERE {{same . "x" "r"}} AND x.Status IN ('pending', 'processing')
        ORDER BY x.Lane LIMIT 1) h
    JOIN {{.Table}} e ON e.Id = h.Id
    WHERE e.Status = 'pending' AND e.NextAttemptDate <= @now AND e.CreatedDate > (SELECT upto FROM win)
      AND {{template "head" .}}
    ORDER BY e.CreatedDate, e.Id LIMIT @limit{{if .Lock}} FOR UPDATE OF e SKIP LOCKED{{end}}
), xp AS MATERIALIZED (
    SELECT e.Id, e.CreatedDate FROM {{.Table}} e
    WHERE {{template "keyed" .}}e.Status = 'processing' AND e.LeaseExpiresDate < @now
      AND {{template "head" .}}
    ORDER BY e.CreatedDate, e.Id LIMIT @limit {{.Lock}}
), cand AS MATERIALIZED (
    SELECT Id FROM (SELECT Id, CreatedDate FROM p UNION ALL SELECT Id, CreatedDate FROM pd
        UNION ALL SELECT Id, CreatedDate FROM ps UNION ALL SELECT Id, CreatedDate FROM xp) u
    ORDER BY CreatedDate, Id LIMIT @limit
){{end}}

{{/* A row that the claim may lease: due pending, or processing with an expired
     lease. The UPDATE repeats it so that a row changed by a concurrent commit
     after the claim's snapshot (PostgreSQL re-checks the new version) is not
     leased: this is what keeps a follower from being handed out twice. */}}
{{define "claimable"}}((t.Status = 'pending' AND t.NextAttemptDate <= @now)
      OR (t.Status = 'processing' AND t.LeaseExpiresDate < @now)){{end}}

{{/* The followers of each head in cand: the later unfinished events of its
     record, in order, while they are due, at most @max_per_record - 1 of them.
     Safe against concurrent claimers: while the head is unfinished no follower
     is a head (an earlier event of its record is unfinished), so no other Claim
     or ClaimIDs can select one; and the head itself was locked FOR UPDATE SKIP
     LOCKED in cand, so only one claimer reaches its followers. */}}
{{define "followers"}}fol AS MATERIALIZED (
    SELECT s.Id FROM cand c JOIN {{.Table}} h ON h.Id = c.Id
    CROSS JOIN LATERAL (
        SELECT f.Id, SUM(CASE WHEN (f.Status = 'pending' AND f.NextAttemptDate <= @now)
                                OR (f.Status = 'processing' AND f.LeaseExpiresDate < @now)
                              THEN 0 ELSE 1 END) OVER (ORDER BY f.Lane) AS blocked
        FROM {{.Table}} f
        WHERE {{same . "f" "h"}} AND f.Status IN ('pending', 'processing')
          AND f.Lane > h.Lane
        ORDER BY f.Lane LIMIT @max_per_record - 1
    ) s
    WHERE s.blocked = 0
){{end}}

{{/* leaseset is the SET of a claim's UPDATE: Attempt+1 is the new fence. */}}
{{define "leaseset"}}SET Status = 'processing', LeaseOwner = @owner, LeaseExpiresDate = @lease_expires,
    Attempt = t.Attempt + 1, LastModifiedDate = @now{{end}}

{{define "leases"}}jsonb_to_recordset(@leases::jsonb) AS l(id text, attempt int){{end}}

{{/* seqrecords selects NextSeqBatch's @records in their ord order. */}}
{{define "seqrecords"}}SELECT @queue, r.record_key, r.object_type, r.record_id, r.n
FROM jsonb_to_recordset(@records::jsonb) AS r(ord int, record_key text, object_type text, record_id text, n bigint)
ORDER BY r.ord{{end}}
