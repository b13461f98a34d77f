package pgstore_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/pgstore"
)

// claimSettings are the settings every claim function must carry as SET
// clauses: the planner's (migration 019 says why each is there) and
// hubsync.lanes_kept, under which the lane UPDATE trigger leaves the claim's
// lanes to the claim (migration 021).
var claimSettings = []string{"enable_seqscan=off", "enable_bitmapscan=off", "enable_sort=off",
	"enable_hashjoin=off", "enable_mergejoin=off", "jit=off", "plan_cache_mode=force_generic_plan",
	"hubsync.lanes_kept=on"}

// withoutComments drops the -- comment lines of a statement and the blank
// space around it.
func withoutComments(s string) string {
	var keep []string
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			keep = append(keep, line)
		}
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}

// TestClaimFunctionsMatchClaimSQL keeps sql/Claim.sql the claim's one source:
// the body of each claim function, as the newest migration that defines it
// (024) left it, must be RETURN QUERY of that file
// as the engine renders it for the queue, its parameters must be the statement's in the
// order of their first use (so $1, $2, … mean the same in both), the engine's
// call must pass them in that order, and the function must carry every
// setting of claimSettings.
func TestClaimFunctionsMatchClaimSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Migrated(t, store.Postgres).DB
	s, err := pgstore.New(db, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []store.Direction{store.DirectionInbound, store.DirectionOutbound, store.DirectionInternal} {
		claim, names, ok := s.Query(dir, "Claim")
		if !ok {
			t.Fatalf("%s: no Claim query", dir)
		}
		_, callNames, ok := s.Query(dir, "ClaimCall")
		if !ok {
			t.Fatalf("%s: no ClaimCall query", dir)
		}
		var src, args, settings string
		if err := db.QueryRowContext(ctx, `SELECT prosrc, array_to_string(proargnames, ','), array_to_string(COALESCE(proconfig, '{}'), ',')
			FROM pg_proc WHERE proname = $1 AND pronamespace = current_schema()::regnamespace`, "hubsync_claim_"+string(dir)).
			Scan(&src, &args, &settings); err != nil {
			t.Fatalf("%s: read the claim function: %v", dir, err)
		}
		argNames, config := strings.Split(args, ","), strings.Split(settings, ",")
		if got, want := withoutComments(src), "BEGIN\nRETURN QUERY\n"+withoutComments(claim)+";\nEND"; got != want {
			t.Errorf("%s: the claim function's body differs from sql/Claim.sql rendered for the queue; "+
				"add a migration that replaces the function with this body:\n%s", dir, want)
		}
		want := make([]string, len(names))
		for i, n := range names {
			want[i] = "p_" + n
		}
		if !slices.Equal(argNames, want) {
			t.Errorf("%s: the claim function's parameters are %v, want %v (Claim.sql's, in order of first use)", dir, argNames, want)
		}
		if !slices.Equal(callNames, names) {
			t.Errorf("%s: ClaimCall passes %v, want %v", dir, callNames, names)
		}
		for _, c := range claimSettings {
			if !slices.Contains(config, c) {
				t.Errorf("%s: the claim function lacks SET %s (it has %v)", dir, c, config)
			}
		}
	}
}

// explainedClaim runs one outbound claim through a store on the database at
// rawURL, exactly as the engine runs it (the claim function, in autocommit),
// under auto_explain (autoExplained). It requires that the claim called the
// function and returns the plan of the function's statement, so the plan
// tests read what ran, under the settings the function really carries, and
// not an EXPLAIN of a copy.
func explainedClaim(t *testing.T, rawURL string, cfg store.Config, p store.ClaimParams) planNode {
	t.Helper()
	s, logged := autoExplained(t, rawURL, cfg)
	if _, err := s.Outbound().Claim(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return claimPlan(t, logged())
}

// claimPlan returns the plan of the claim function's statement among the
// statements of one outbound claim.
func claimPlan(t *testing.T, stmts []explainedStatement) planNode {
	t.Helper()
	var plans []explainedStatement
	var called bool
	for _, e := range stmts {
		if strings.Contains(e.QueryText, "WITH recovered AS MATERIALIZED") {
			plans = append(plans, e)
		}
		called = called || strings.Contains(e.QueryText, "FROM hubsync_claim_outbound(")
	}
	if !called {
		t.Fatalf("the claim did not call hubsync_claim_outbound (%d statements logged)", len(stmts))
	}
	if len(plans) != 1 {
		t.Fatalf("auto_explain logged %d plans of the claim statement, want 1 (of %d statements)", len(plans), len(stmts))
	}
	return plans[0].Plan
}

// autoExplained returns a store on the database at rawURL over one
// connection where auto_explain logs every statement's executed plan, nested
// ones (function bodies, triggers) included, with buffers, as a notice; and
// logged, which returns the statements logged since its last call. auto_explain
// needs a superuser to LOAD it, as the tests' default database URL has.
func autoExplained(t *testing.T, rawURL string, cfg store.Config) (s *pgstore.Store, logged func() []explainedStatement) {
	t.Helper()
	ctx := context.Background()
	cc, err := pgx.ParseConfig(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var notices []string
	cc.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		notices = append(notices, n.Message)
		mu.Unlock()
	}
	db := stdlib.OpenDB(*cc)
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1) // the session settings below hold for every statement
	db.SetMaxIdleConns(1)
	for _, q := range []string{
		"LOAD 'auto_explain'",
		"SET auto_explain.log_min_duration = 0",
		"SET auto_explain.log_analyze = on",
		"SET auto_explain.log_buffers = on",
		"SET auto_explain.log_timing = off",
		"SET auto_explain.log_nested_statements = on",
		"SET auto_explain.log_format = json",
		"SET auto_explain.log_level = notice",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v (the plan tests need auto_explain, which only a superuser may LOAD)", q, err)
		}
	}
	if s, err = pgstore.New(db, cfg); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	notices = nil
	mu.Unlock()
	return s, func() []explainedStatement {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		var out []explainedStatement
		for _, n := range notices {
			i := strings.Index(n, "{")
			if i < 0 {
				continue
			}
			var e explainedStatement
			if err := json.Unmarshal([]byte(n[i:]), &e); err != nil {
				t.Fatalf("auto_explain notice: %v\n%s", err, n)
			}
			out = append(out, e)
		}
		notices = nil
		return out
	}
}

// explainedStatement is one plan auto_explain logged in JSON.
type explainedStatement struct {
	QueryText string   `json:"Query Text"`
	Plan      planNode `json:"Plan"`
}
