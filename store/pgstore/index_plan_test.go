package pgstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/pgstore"
)

// queueHistory fills each queue table as a service that has run a while
// leaves it: 40,000 processed events over 4,000 records per table (nine in
// ten for key 'hubspot', the rest for 'other'), a backlog of 4,000 pending
// events over 1,000 of those records, 300 dead letters and 100 events under a
// live lease. Timestamps are microseconds from 2025-01-01 (history) and
// 2025-02-01 (backlog).
const queueHistory = `
INSERT INTO _System_IntegrationOutbound (Id, Destination, ObjectType, RecordID, EventType, Payload, Status,
    CreatedDate, LastModifiedDate, NextAttemptDate, ProcessedDate, Seq, Lane)
SELECT 'p' || lpad(g::text, 8, '0'), CASE WHEN g % 10 = 0 THEN 'other' ELSE 'hubspot' END, 'contacts', 'r' || (g % 4000),
    'update', '{"email":"a@example.com"}', 'processed', d, d, d, d, g / 4000 + 1, g / 4000 + 1
FROM generate_series(1, 40000) g, LATERAL (SELECT timestamptz '2025-01-01' + g * interval '1 ms' AS d) t;
INSERT INTO _System_IntegrationOutbound (Id, Destination, ObjectType, RecordID, EventType, Payload, Status,
    CreatedDate, LastModifiedDate, NextAttemptDate, Seq, Lane)
SELECT 'q' || lpad(g::text, 8, '0'), CASE WHEN g % 10 = 0 THEN 'other' ELSE 'hubspot' END, 'contacts', 'r' || (g % 1000),
    'update', '{"email":"a@example.com"}', 'pending', d, d, d, 100 + g / 1000, 100 + g / 1000
FROM generate_series(1, 4000) g, LATERAL (SELECT timestamptz '2025-02-01' + g * interval '1 ms' AS d) t;
INSERT INTO _System_IntegrationOutbound (Id, Destination, ObjectType, RecordID, EventType, Payload, Status, ErrorMessage,
    CreatedDate, LastModifiedDate, NextAttemptDate, Seq, Lane)
SELECT 'f' || lpad(g::text, 8, '0'), 'hubspot', 'contacts', 'x' || g, 'update', '{}', 'failed', 'boom',
    timestamptz '2025-01-15', timestamptz '2025-01-15', timestamptz '2025-01-15', 1, 1
FROM generate_series(1, 300) g;
INSERT INTO _System_IntegrationOutbound (Id, Destination, ObjectType, RecordID, EventType, Payload, Status,
    CreatedDate, LastModifiedDate, NextAttemptDate, LeaseOwner, LeaseExpiresDate, Attempt, Seq, Lane)
SELECT 'l' || lpad(g::text, 8, '0'), 'hubspot', 'contacts', 'y' || g, 'update', '{}', 'processing',
    timestamptz '2025-02-01', timestamptz '2025-02-01', timestamptz '2025-02-01', 'w', timestamptz '2030-01-01', 1, 1, 1
FROM generate_series(1, 100) g;

INSERT INTO _System_IntegrationInbound (Id, Source, ExternalID, ObjectType, EventType, Payload, IdempotencyKey, Status,
    CreatedDate, LastModifiedDate, NextAttemptDate, ProcessedDate, Seq, Lane)
SELECT 'p' || lpad(g::text, 8, '0'), CASE WHEN g % 10 = 0 THEN 'other' ELSE 'hubspot' END, 'r' || (g % 4000), 'contacts',
    'update', '{"a":1}', 'k-p' || g, 'processed', d, d, d, d, g / 4000 + 1, g / 4000 + 1
FROM generate_series(1, 40000) g, LATERAL (SELECT timestamptz '2025-01-01' + g * interval '1 ms' AS d) t;
INSERT INTO _System_IntegrationInbound (Id, Source, ExternalID, ObjectType, EventType, Payload, IdempotencyKey, Status,
    CreatedDate, LastModifiedDate, NextAttemptDate, Seq, Lane)
SELECT 'q' || lpad(g::text, 8, '0'), CASE WHEN g % 10 = 0 THEN 'other' ELSE 'hubspot' END, 'r' || (g % 1000), 'contacts',
    'update', '{"a":1}', 'k-q' || g, 'pending', d, d, d, 100 + g / 1000, 100 + g / 1000
FROM generate_series(1, 4000) g, LATERAL (SELECT timestamptz '2025-02-01' + g * interval '1 ms' AS d) t;
INSERT INTO _System_IntegrationInbound (Id, Source, ExternalID, ObjectType, EventType, Payload, IdempotencyKey, Status, ErrorMessage,
    CreatedDate, LastModifiedDate, NextAttemptDate, Seq, Lane)
SELECT 'f' || lpad(g::text, 8, '0'), 'hubspot', 'x' || g, 'contacts', 'update', '{}', 'k-f' || g, 'failed', 'boom',
    timestamptz '2025-01-15', timestamptz '2025-01-15', timestamptz '2025-01-15', 1, 1
FROM generate_series(1, 300) g;
INSERT INTO _System_IntegrationInbound (Id, Source, ExternalID, ObjectType, EventType, Payload, IdempotencyKey, Status,
    CreatedDate, LastModifiedDate, NextAttemptDate, LeaseOwner, LeaseExpiresDate, Attempt, Seq, Lane)
SELECT 'l' || lpad(g::text, 8, '0'), 'hubspot', 'y' || g, 'contacts', 'update', '{}', 'k-l' || g, 'processing',
    timestamptz '2025-02-01', timestamptz '2025-02-01', timestamptz '2025-02-01', 'w', timestamptz '2030-01-01', 1, 1, 1
FROM generate_series(1, 100) g;

INSERT INTO _System_OutboxEvent (Id, EventType, ObjectType, RecordID, Payload, Status,
    CreatedDate, LastModifiedDate, NextAttemptDate, ProcessedDate, Seq, Lane)
SELECT 'p' || lpad(g::text, 8, '0'), 'record.updated', 'contacts', 'r' || (g % 4000), '{"a":1}', 'processed',
    d, d, d, d, g / 4000 + 1, g / 4000 + 1
FROM generate_series(1, 40000) g, LATERAL (SELECT timestamptz '2025-01-01' + g * interval '1 ms' AS d) t;
INSERT INTO _System_OutboxEvent (Id, EventType, ObjectType, RecordID, Payload, Status,
    CreatedDate, LastModifiedDate, NextAttemptDate, Seq, Lane)
SELECT 'q' || lpad(g::text, 8, '0'), 'record.updated', 'contacts', 'r' || (g % 1000), '{"a":1}', 'pending',
    d, d, d, 100 + g / 1000, 100 + g / 1000
FROM generate_series(1, 4000) g, LATERAL (SELECT timestamptz '2025-02-01' + g * interval '1 ms' AS d) t;
INSERT INTO _System_OutboxEvent (Id, EventType, ObjectType, RecordID, Payload, Status, ErrorMessage,
    CreatedDate, LastModifiedDate, NextAttemptDate, Seq, Lane)
SELECT 'f' || lpad(g::text, 8, '0'), 'record.updated', 'contacts', 'x' || g, '{}', 'failed', 'boom',
    timestamptz '2025-01-15', timestamptz '2025-01-15', timestamptz '2025-01-15', 1, 1
FROM generate_series(1, 300) g;
INSERT INTO _System_OutboxEvent (Id, EventType, ObjectType, RecordID, Payload, Status,
    CreatedDate, LastModifiedDate, NextAttemptDate, LeaseOwner, LeaseExpiresDate, Attempt, Seq, Lane)
SELECT 'l' || lpad(g::text, 8, '0'), 'record.updated', 'contacts', 'y' || g, '{}', 'processing',
    timestamptz '2025-02-01', timestamptz '2025-02-01', timestamptz '2025-02-01', 'w', timestamptz '2030-01-01', 1, 1, 1
FROM generate_series(1, 100) g`

var queueTables = []string{"_system_integrationinbound", "_system_integrationoutbound", "_system_outboxevent"}

// laneTables are the record lanes of migration 018, which the claim function
// reads by its two due indexes (migrations 023, 024).
var laneTables = []string{"hubsync_lane_inbound", "hubsync_lane_outbound", "hubsync_lane_internal"}

// explainPlan returns the plan PostgreSQL chooses for query (EXPLAIN, FORMAT
// JSON; nothing runs), as a custom plan (the arguments' values known) or as
// the generic plan that a prepared statement may switch to after a few
// executions.
func explainPlan(t *testing.T, db *sql.DB, query string, generic bool, args ...any) planNode {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var doc []byte
	if generic {
		if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
			t.Fatal(err)
		}
		defer conn.ExecContext(ctx, `RESET plan_cache_mode`) //nolint:errcheck // the connection goes back to the pool
		if _, err := conn.ExecContext(ctx, `PREPARE probe AS `+query); err != nil {
			t.Fatalf("prepare %s: %v", query, err)
		}
		defer conn.ExecContext(ctx, `DEALLOCATE probe`) //nolint:errcheck // as above
		// EXECUTE takes no bind parameters: its arguments are literals.
		lits := make([]string, len(args))
		for i, a := range args {
			lits[i] = "'" + strings.ReplaceAll(fmt.Sprint(a), "'", "''") + "'"
		}
		exec := `EXECUTE probe`
		if len(lits) > 0 {
			exec += `(` + strings.Join(lits, ", ") + `)`
		}
		err = conn.QueryRowContext(ctx, `EXPLAIN (FORMAT JSON) `+exec).Scan(&doc)
	} else {
		err = conn.QueryRowContext(ctx, `EXPLAIN (FORMAT JSON) `+query, args...).Scan(&doc)
	}
	if err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	var out []explained
	if err := json.Unmarshal(doc, &out); err != nil || len(out) != 1 {
		t.Fatalf("explain: %v (%d plans)", err, len(out))
	}
	return out[0].Plan
}

// planProbe is one statement to plan: its text and its arguments in bind
// order. ordered says the statement takes the first rows of a backlog in an
// order an index must give (ORDER BY … LIMIT): sorting every candidate would
// read the whole backlog for each batch. (DeadLetters may sort: it reads only
// the dead letters, from their partial index.)
type planProbe struct {
	name    string
	query   string
	args    []any
	ordered bool
}

// indexedQueries are the hot and periodic statements on the queue tables
// other than the claim function (plan_test.go, stale_stats_test.go): the
// store's own, rendered for each queue as the engine sends them, and those
// of the packages that read the queue tables directly (dispatch, drift,
// ops), read from their sql directories with the loader they embed them with.
func indexedQueries(t *testing.T, s *pgstore.Store) []planProbe {
	t.Helper()
	now := "2025-03-01T00:00:00Z"
	var leases []map[string]any
	for i := 1; i <= 100; i++ {
		leases = append(leases, map[string]any{"id": fmt.Sprintf("l%08d", i), "attempt": 1})
	}
	leasesJSON, _ := json.Marshal(leases)
	idList := make([]string, 100)
	for i := range idList {
		idList[i] = fmt.Sprintf("q%08d", i+1)
	}
	idsJSON, _ := json.Marshal(idList)
	byName := map[string]any{
		"now": now, "key": "hubspot", "limit": 100, "after": "", "batch": 1000,
		// The oldest 1% of the history is past retention.
		"cutoff": "2025-01-01T00:00:04Z", "leases": string(leasesJSON), "ids": string(idsJSON),
		"id": "f00000001", "attempt": 1, "error": "boom", "status": "pending", "next": now,
		"retry_count": 0, "lane": 1000, "until": "2030-01-02T00:00:00Z", "owner": "w",
		"lease_expires": "2030-01-02T00:00:00Z", "max_per_record": 10, "idempotency_key": "k-p5",
	}
	var probes []planProbe
	for _, dir := range []store.Direction{store.DirectionInbound, store.DirectionOutbound, store.DirectionInternal} {
		for _, name := range []string{"Cleanup", "DeadLetters", "FailedByKey", "FailedByID", "Get", "Pending",
			"ClaimIDs", "Complete", "Release", "ExtendLease", "LeaseLost", "Fail", "Retry", "Requeue", "IDByIdempotencyKey"} {
			text, names, ok := s.Query(dir, name)
			if !ok || strings.TrimSpace(withoutComments(text)) == "" {
				continue
			}
			bind := func(key string) []any {
				args := make([]any, len(names))
				for i, n := range names {
					v, ok := byName[n]
					if !ok {
						t.Fatalf("%s %s: no value for @%s", dir, name, n)
					}
					if n == "key" {
						v = key
					}
					args[i] = v
				}
				return args
			}
			probes = append(probes, planProbe{name: string(dir) + " " + name, query: text, args: bind("hubspot")})
			if name == "DeadLetters" && slices.Contains(names, "key") {
				// The listing of every key's dead letters.
				probes = append(probes, planProbe{name: string(dir) + " " + name + " (every key)", query: text, args: bind("")})
			}
		}
	}
	// The other packages' statements, from the files they embed.
	load := func(dir string) *dialectsql.Queries {
		q, err := dialectsql.Load(os.DirFS("../.."), dir, store.Postgres)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	dispatch, drift, ops := load("dispatch/sql"), load("drift/sql"), load("ops/sql")
	probes = append(probes,
		planProbe{"dispatch publish_claim", dispatch.Get("publish_claim"), []any{"hubspot", now, now, 100, now}, true},
		planProbe{"dispatch record_head", dispatch.Get("record_head"), []any{"hubspot", "contacts", "r5", 200}, false},
		planProbe{"drift open_inbound", drift.Get("open_inbound"), []any{"hubspot", "contacts", `["r1","r2","r3"]`}, false},
		planProbe{"drift open_outbound", drift.Get("open_outbound"), []any{"hubspot", "contacts", `["r1","r2","r3"]`}, false},
		planProbe{"ops record_inbound", ops.Get("record_inbound"), []any{"hubspot", "r5", "contacts", 50}, false},
		planProbe{"ops record_outbound", ops.Get("record_outbound"), []any{"contacts", "r5", "hubspot", 50}, false},
		planProbe{"ops discard_delete_outbound", ops.Get("discard_delete_outbound"), []any{"f00000001"}, false},
	)
	return probes
}

// TestQueueQueriesUseIndexes holds every hot or periodic statement on the
// queue tables, and the claim function's record probes, to an index path after migration 020 dropped the indexes no
// PostgreSQL query needed: none may read a queue table with a sequential
// scan, with statistics or without (a table filled faster than it was
// analysed), as a custom or as a generic plan, and a statement that pages
// in an order must read it from an index. Stats is the exception: it
// counts every row by status, a full read whatever the indexes.
func TestQueueQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tdb := dbtest.Migrated(t, store.Postgres)
	db := tdb.DB
	noAutovacuum(t, db)
	cfg := store.Config{Now: func() time.Time { return time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC) }}
	s, err := pgstore.New(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, queueHistory); err != nil {
		t.Fatal(err)
	}
	probes := indexedQueries(t, s)
	for _, state := range []string{"no-statistics", "analysed"} {
		if state == "analysed" {
			if _, err := db.ExecContext(ctx, `VACUUM ANALYZE _System_IntegrationInbound, _System_IntegrationOutbound, _System_OutboxEvent`); err != nil {
				t.Fatal(err)
			}
		} else {
			for _, table := range queueTables {
				if cols, analysed := statisticsRows(t, db, table); cols != 0 || analysed {
					t.Fatalf("fixture: %s has %d statistics rows (analysed %v), want none", table, cols, analysed)
				}
			}
		}
		// The claim function (run once, as the engine runs it): each claimed
		// record's events are read on the open index and its live leases on
		// the lease index, never on a record's whole history
		// (idx_outbound_record), which without them still is an index path;
		// and its lanes on the two due indexes of the lanes (migrations 023, 024),
		// never by a scan of the lanes table.
		claim := explainedClaim(t, tdb.URL, cfg, store.ClaimParams{Key: "hubspot", Limit: 100, LeaseDuration: time.Minute, Owner: "w"})
		used := map[string]bool{}
		claim.walk(func(n planNode) {
			used[n.Index] = true
			if n.NodeType == "Seq Scan" && (slices.Contains(queueTables, n.Relation) || slices.Contains(laneTables, n.Relation)) {
				t.Errorf("claim (%s) reads %s with a sequential scan; plan:\n%s", state, n.Relation, claim.shape())
			}
		})
		for _, ix := range []string{"idx_outbound_open", "idx_outbound_lease", "idx_lane_outbound_claimed", "idx_lane_outbound_free"} {
			if !used[ix] {
				t.Errorf("claim (%s) does not probe %s; plan:\n%s", state, ix, claim.shape())
			}
		}
		for _, generic := range []bool{false, true} {
			for _, p := range probes {
				plan := explainPlan(t, db, p.query, generic, p.args...)
				plan.walk(func(n planNode) {
					if n.NodeType == "Seq Scan" && slices.Contains(queueTables, n.Relation) {
						t.Errorf("%s (%s, generic plan %v) reads %s with a sequential scan; plan:\n%s",
							p.name, state, generic, n.Relation, plan.shape())
					}
					if p.ordered && n.NodeType == "Sort" {
						t.Errorf("%s (%s, generic plan %v) sorts its candidates instead of reading them in index order; plan:\n%s",
							p.name, state, generic, plan.shape())
					}
				})
			}
		}
	}
}
