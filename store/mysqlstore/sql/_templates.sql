-- Template definitions of the MySQL/MariaDB backend's queries. Each sql/NAME.sql
-- beside this file overrides, or adds to, the shared internal/sqlq/sql/NAME.sql;
-- internal/sqlq renders every query once per queue with text/template
-- ({{.Table}}, {{.Key}}, the record-key columns) and binds its @named
-- parameters with internal/dialectsql.
-- Lists of ids and leases arrive as one JSON array parameter, unpacked with
-- JSON_TABLE (MySQL 8.0.4+, MariaDB 10.6+).
--
-- MySQL has no UPDATE … RETURNING, so a claim is a short read-committed
-- transaction: ClaimLockPending and ClaimLockExpired lock the due events of one
-- key with FOR UPDATE SKIP LOCKED, ClaimUpdate leases them and SelectIDs reads
-- them back.

{{/* A candidate e is the head of its record: no earlier event of its record is
     unfinished, and no other one holds a live lease (see the PostgreSQL file).
     The probe is forced onto the record key's index: with the statistics of a
     table that filled up faster than InnoDB recomputes them, MariaDB probed
     through an index on the key alone (idx_outbound_poll on Destination,
     idx_inbound_expiry on Source), reading the whole backlog per
     candidate (TestClaimHeadProbeWithStaleStatistics, and for every claim
     statement of every queue TestClaimProbesWithStaleStatistics). */}}
{{define "unblocked"}}NOT EXISTS (
        SELECT 1 FROM {{.Table}} x FORCE INDEX ({{.OpenIndex}})
        WHERE {{same . "x" "e"}} AND x.Id <> e.Id AND x.Status IN ('pending', 'processing')
          AND (x.Lane < e.Lane OR (x.Status = 'processing' AND x.LeaseExpiresDate >= @now)))
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

{{/* due is 1 if the follower f is claimable now, else 0. */}}
{{define "due"}}CASE WHEN (f.Status = 'pending' AND f.NextAttemptDate <= @now)
           OR (f.Status = 'processing' AND f.LeaseExpiresDate < @now) THEN 1 ELSE 0 END{{end}}
