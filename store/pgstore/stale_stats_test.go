package pgstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/pgstore"
	"github.com/hubsync/hubsync/store/storetest"
)

// planNode is the part of a node of EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
// that these tests read.
type planNode struct {
	NodeType      string     `json:"Node Type"`
	Relation      string     `json:"Relation Name"`
	Index         string     `json:"Index Name"`
	Strategy      string     `json:"Strategy"`
	Operation     string     `json:"Operation"`
	ParentRel     string     `json:"Parent Relationship"`
	SubplanName   string     `json:"Subplan Name"`
	CTEName       string     `json:"CTE Name"`
	ActualRows    float64    `json:"Actual Rows"`
	ActualLoops   float64    `json:"Actual Loops"`
	RemovedFilter float64    `json:"Rows Removed by Filter"`
	RemovedIndex  float64    `json:"Rows Removed by Index Recheck"`
	SharedHit     int64      `json:"Shared Hit Blocks"`
	SharedRead    int64      `json:"Shared Read Blocks"`
	Plans         []planNode `json:"Plans"`
}

type explained struct {
	Plan planNode `json:"Plan"`
}

// walk calls f for n and every node under it.
func (n planNode) walk(f func(planNode)) {
	f(n)
	for _, c := range n.Plans {
		c.walk(f)
	}
}

// eventRowsRead is how many rows of the events table the plan's scans
// produced or filtered away, over all their loops: the work that grew with
// the backlog in the bad plans.
func (n planNode) eventRowsRead(table string) float64 {
	var total float64
	n.walk(func(c planNode) {
		if c.Relation == table && strings.Contains(c.NodeType, "Scan") {
			total += (c.ActualRows + c.RemovedFilter + c.RemovedIndex) * c.ActualLoops
		}
	})
	return total
}

// shape renders the plan's node types, relations and indexes, one node per
// line, indented by depth: what the planner chose, without its estimates.
func (n planNode) shape() string {
	var b strings.Builder
	var rec func(planNode, int)
	rec = func(c planNode, depth int) {
		fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", depth), c.NodeType)
		for _, s := range []string{c.Strategy, c.Relation, c.Index, c.CTEName, c.SubplanName} {
			if s != "" {
				fmt.Fprintf(&b, " %s", s)
			}
		}
		b.WriteString("\n")
		for _, k := range c.Plans {
			rec(k, depth+1)
		}
	}
	rec(n, 0)
	return b.String()
}

// noAutovacuum turns autovacuum (and so autoanalyze) off for every table of
// the test's schema, so that no statistics appear behind the test's back.
func noAutovacuum(t *testing.T, db *sql.DB) {
	t.Helper()
	ctx := context.Background()
	rows, err := db.QueryContext(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema()`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	for _, n := range tables {
		if _, err := db.ExecContext(ctx, `ALTER TABLE `+n+` SET (autovacuum_enabled = false)`); err != nil {
			t.Fatal(err)
		}
	}
}

// statisticsRows counts the planner statistics PostgreSQL holds for a table
// of the test's schema (pg_statistic, one row per analysed column) and says
// whether it was ever analysed or vacuumed.
func statisticsRows(t *testing.T, db *sql.DB, table string) (cols int, analysed bool) {
	t.Helper()
	ctx := context.Background()
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_statistic s JOIN pg_class c ON c.oid = s.starelid
		WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`, table).Scan(&cols); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(last_analyze, last_autoanalyze, last_vacuum, last_autovacuum) IS NOT NULL
		FROM pg_stat_user_tables WHERE relname = $1 AND schemaname = current_schema()`, table).Scan(&analysed); err != nil {
		t.Fatal(err)
	}
	return cols, analysed
}

const outboundTable = "_system_integrationoutbound"

// staleBacklog is a fresh store holding 6,000 pending outbound events over
// 2,000 records (3 each, interleaved in creation order), loaded after
// migration with autovacuum off and no ANALYZE: the state after a fresh table
// filled quickly, or a restart that lost the statistics.
// It returns the store, the database's URL and the store's config (for
// explainedClaim) and the claim to run.
func staleBacklog(t *testing.T) (*pgstore.Store, string, store.Config, store.ClaimParams) {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tdb := dbtest.Migrated(t, store.Postgres)
	noAutovacuum(t, tdb.DB)
	cfg := store.Config{Now: func() time.Time { return base.Add(time.Hour) }}
	s, err := pgstore.New(tdb.DB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := storetest.FillOutboundRecords(ctx, s, "hubspot", "s", 6000, 2000, base); err != nil {
		t.Fatal(err)
	}
	return s, tdb.URL, cfg, store.ClaimParams{Key: "hubspot", Limit: 100, LeaseDuration: time.Minute, Owner: "w"}
}

// TestClaimWithoutStatistics reproduces issue 16's stale-statistics claim: on
// a backlog that was never analysed, the claim must still read a number of
// rows and buffers proportional to what it returns, not to the backlog. It
// measures reads (EXPLAIN ANALYZE), never time.
func TestClaimWithoutStatistics(t *testing.T) {
	s, url, cfg, p := staleBacklog(t)
	if cols, analysed := statisticsRows(t, s.DB(), outboundTable); cols != 0 || analysed {
		t.Fatalf("fixture: the outbound table has %d statistics rows (analysed %v), want none", cols, analysed)
	}
	plan := explainedClaim(t, url, cfg, p)
	claimed := plan.ActualRows
	rows := plan.eventRowsRead(outboundTable)
	buffers := plan.SharedHit + plan.SharedRead
	t.Logf("no statistics: claimed %.0f events, read %.0f event rows, %d buffers; plan:\n%s", claimed, rows, buffers, plan.shape())
	if claimed != 300 {
		t.Fatalf("claimed %.0f events, want 300 (100 records × 3 events)", claimed)
	}
	// Proportional to the claim: each claimed event may be read a few times
	// (its lane probe, the follower walk, the UPDATE's join), never the
	// backlog's 6,000 rows once per candidate.
	if rows > 20*claimed {
		t.Errorf("the claim read %.0f event rows to return %.0f: its cost depends on the backlog", rows, claimed)
	}
	if buffers > 30_000 {
		t.Errorf("the claim touched %d buffers to return %.0f events, want at most 30,000", buffers, claimed)
	}
}

// TestClaimPlanIndependentOfStatistics runs the claim on the same backlog
// under four states of the planner's statistics and requires the same plan
// shape (node types, tables, indexes) in all of them, made only of index
// scans, and the same reads. The states: none at all (a fresh table); taken
// while the tables were empty (stale: they say there is nothing); taken on
// the full backlog (fresh); and taken on a backlog that was mostly finished
// since (stale the other way: they say most rows are processed).
func TestClaimPlanIndependentOfStatistics(t *testing.T) {
	ctx := context.Background()
	analyze := func(t *testing.T, db *sql.DB) {
		t.Helper()
		if _, err := db.ExecContext(ctx, `ANALYZE _System_IntegrationOutbound, hubsync_lane_outbound`); err != nil {
			t.Fatal(err)
		}
	}
	states := []struct {
		name   string
		before func(t *testing.T, db *sql.DB) // after migration, before the backlog is loaded
		after  func(t *testing.T, db *sql.DB) // after the backlog is loaded
	}{
		{"none", nil, nil},
		{"taken-empty", analyze, nil},
		{"fresh", nil, analyze},
		{"taken-before-most-finished", nil, func(t *testing.T, db *sql.DB) {
			// Statistics of a larger, mostly pending table, then most of it
			// finishes: they now overstate the pending rows a hundredfold.
			if _, err := db.ExecContext(ctx, `UPDATE _System_IntegrationOutbound SET Status = 'pending' WHERE Status = 'processed'`); err != nil {
				t.Fatal(err)
			}
			analyze(t, db)
			if _, err := db.ExecContext(ctx, `UPDATE _System_IntegrationOutbound SET Status = 'processed', ProcessedDate = CreatedDate WHERE Id LIKE 'h%'`); err != nil {
				t.Fatal(err)
			}
		}},
	}
	var first string
	for _, st := range states {
		t.Run(st.name, func(t *testing.T) {
			base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			tdb := dbtest.Migrated(t, store.Postgres)
			db := tdb.DB
			noAutovacuum(t, db)
			if st.before != nil {
				st.before(t, db)
			}
			cfg := store.Config{Now: func() time.Time { return base.Add(time.Hour) }}
			s, err := pgstore.New(db, cfg)
			if err != nil {
				t.Fatal(err)
			}
			// History: 20,000 processed events (loaded pending, then finished), and
			// the backlog: 6,000 pending over 2,000 records.
			if err := storetest.FillOutbound(ctx, s, "hubspot", "h", 20000, base.Add(-time.Hour)); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, `UPDATE _System_IntegrationOutbound SET Status = 'processed', ProcessedDate = CreatedDate`); err != nil {
				t.Fatal(err)
			}
			if err := storetest.FillOutboundRecords(ctx, s, "hubspot", "s", 6000, 2000, base); err != nil {
				t.Fatal(err)
			}
			if st.after != nil {
				st.after(t, db)
			}
			plan := explainedClaim(t, tdb.URL, cfg, store.ClaimParams{Key: "hubspot", Limit: 100, LeaseDuration: time.Minute, Owner: "w"})
			shape := plan.shape()
			rows := plan.eventRowsRead(outboundTable)
			t.Logf("statistics %s: claimed %.0f, read %.0f event rows, %d buffers; plan:\n%s",
				st.name, plan.ActualRows, rows, plan.SharedHit+plan.SharedRead, shape)
			if plan.ActualRows != 300 {
				t.Errorf("claimed %.0f events, want 300", plan.ActualRows)
			}
			plan.walk(func(n planNode) {
				if n.NodeType == "Seq Scan" || strings.HasPrefix(n.NodeType, "Bitmap") || n.NodeType == "Hash Join" || n.NodeType == "Merge Join" {
					t.Errorf("plan has a %s on %s: a read of a whole table or index range", n.NodeType, n.Relation)
				}
				if n.NodeType == "Sort" && n.ParentRel != "" && n.CTEName == "" && n.ActualRows*n.ActualLoops > 300 {
					t.Errorf("plan sorts %.0f rows", n.ActualRows*n.ActualLoops)
				}
			})
			if rows > 20*plan.ActualRows {
				t.Errorf("the claim read %.0f event rows to return %.0f", rows, plan.ActualRows)
			}
			if first == "" {
				first = shape
			} else if shape != first {
				t.Errorf("plan shape with statistics %s differs from the one with none:\n%s\nwant:\n%s", st.name, shape, first)
			}
		})
	}
}

// TestLaneTriggersProbeWithoutStatistics checks the other half of a claim's
// cost, which EXPLAIN does not show: the lane triggers that its UPDATE and
// the Complete fire. Without statistics the planner once turned them into
// scans of every lane per changed record (2,000 lanes × 100 records). The
// index tuples they read from the lanes table must stay proportional to the
// records claimed. One connection, so the backend's counters can be flushed
// (pg_stat_force_next_flush) and read back in order.
func TestLaneTriggersProbeWithoutStatistics(t *testing.T) {
	ctx := context.Background()
	s, _, _, p := staleBacklog(t)
	db := s.DB()
	db.SetMaxOpenConns(1)
	laneReads := func() (tuples, seqScans int64) {
		t.Helper()
		if _, err := db.ExecContext(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, `SELECT COALESCE(SUM(idx_tup_read), 0) FROM pg_stat_user_indexes
			WHERE schemaname = current_schema() AND relname = 'hubsync_lane_outbound'`).Scan(&tuples); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, `SELECT seq_scan FROM pg_stat_user_tables
			WHERE schemaname = current_schema() AND relname = 'hubsync_lane_outbound'`).Scan(&seqScans); err != nil {
			t.Fatal(err)
		}
		return tuples, seqScans
	}
	if cols, analysed := statisticsRows(t, db, "hubsync_lane_outbound"); cols != 0 || analysed {
		t.Fatalf("fixture: the lanes table has %d statistics rows (analysed %v), want none", cols, analysed)
	}
	t0, s0 := laneReads()
	evs, err := s.Outbound().Claim(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 300 {
		t.Fatalf("claimed %d events, want 300", len(evs))
	}
	ls := make([]store.Lease, len(evs))
	for i, e := range evs {
		ls[i] = e.Lease()
	}
	if err := s.Outbound().Complete(ctx, ls...); err != nil {
		t.Fatal(err)
	}
	t1, s1 := laneReads()
	t.Logf("claim and complete of 100 records (2,000 lanes): %d lane index tuples read, %d seq scans of the lanes", t1-t0, s1-s0)
	if s1 != s0 {
		t.Errorf("the lanes table was scanned %d times", s1-s0)
	}
	// The claim reads its 100 lanes and the triggers probe each record's lane
	// a few times (lock, update or delete): a few hundred, never 100 × 2,000.
	if got := t1 - t0; got > 20*100 {
		t.Errorf("claim and complete read %d lane index tuples for 100 records, want at most 2,000", got)
	}
}

// TestRecoveredClaimWithoutStatistics is the claim after a replica died: 100
// records whose leases expired, then a backlog of 10,000 records enqueued
// while they were out, never analysed. The claim must take the expired
// leases' lanes first (migrations 023, 024), each branch from its partial
// index in order, locking no more lanes than the limit: 100 from the claimed
// index and the remaining 50 places from the free one, and read rows in
// proportion to what it returns.
func TestRecoveredClaimWithoutStatistics(t *testing.T) {
	claimedFirstWithoutStatistics(t, "expired leases", nil)
}

// TestReleasedClaimWithoutStatistics is TestRecoveredClaimWithoutStatistics
// with the 100 records released with a delay instead (outbound's cycle when
// the HubSpot budget refuses), before the backlog was enqueued: once their
// delay ends they come first (migration 024), from the claimed index, with
// no sort and no more lanes read than the claim returns.
func TestReleasedClaimWithoutStatistics(t *testing.T) {
	claimedFirstWithoutStatistics(t, "released records", func(ctx context.Context, q store.Queue[store.OutboundEvent], evs []store.OutboundEvent) error {
		leases := make([]store.Lease, len(evs))
		for i, e := range evs {
			leases[i] = e.Lease()
		}
		return q.Release(ctx, 30*time.Second, leases...)
	})
}

// claimedFirstWithoutStatistics claims 100 records, hands them to back (nil
// leaves their 15 s leases to expire), enqueues a backlog of 10,000 records
// behind them and, a minute later, with no statistics on the queue or its
// lanes, claims 150 events: the 100 records claimed before, then the first 50
// of the backlog, each branch an index range of its own partial index in
// order.
func claimedFirstWithoutStatistics(t *testing.T, what string, back func(context.Context, store.Queue[store.OutboundEvent], []store.OutboundEvent) error) {
	ctx := context.Background()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tdb := dbtest.Migrated(t, store.Postgres)
	noAutovacuum(t, tdb.DB)
	clock := storetest.NewClock(base.Add(time.Hour))
	cfg := store.Config{Now: clock.Now}
	s, err := pgstore.New(tdb.DB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := storetest.FillOutbound(ctx, s, "hubspot", "y", 100, base); err != nil {
		t.Fatal(err)
	}
	first, err := s.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: 100, LeaseDuration: 15 * time.Second, Owner: "first"})
	if err != nil || len(first) != 100 {
		t.Fatalf("fixture: the first claim leased %d events (%v), want 100", len(first), err)
	}
	if back != nil {
		if err := back(ctx, s.Outbound(), first); err != nil {
			t.Fatal(err)
		}
	}
	if err := storetest.FillOutbound(ctx, s, "hubspot", "s", 10000, base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	for _, table := range []string{outboundTable, "hubsync_lane_outbound"} {
		if cols, analysed := statisticsRows(t, tdb.DB, table); cols != 0 || analysed {
			t.Fatalf("fixture: %s has %d statistics rows (analysed %v), want none", table, cols, analysed)
		}
	}
	s2, logged := autoExplained(t, tdb.URL, cfg)
	evs, err := s2.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: 150, LeaseDuration: 15 * time.Second, Owner: "w"})
	if err != nil {
		t.Fatal(err)
	}
	plan := claimPlan(t, logged())
	rows := plan.eventRowsRead(outboundTable)
	t.Logf("no statistics, 100 %s before 10,000 pending lanes: claimed %d events, read %.0f event rows, %d buffers; plan:\n%s",
		what, len(evs), rows, plan.SharedHit+plan.SharedRead, plan.shape())
	var recovered, fresh int
	for _, e := range evs {
		switch {
		case strings.HasPrefix(e.ID, "y"):
			recovered++
		case e.ID <= fmt.Sprintf("s%010d", 50):
			fresh++
		}
	}
	if len(evs) != 150 || recovered != 100 || fresh != 50 {
		t.Errorf("claimed %d events, %d of the %s and %d of the first 50 pending records; want all 100 %s, then the first 50 pending",
			len(evs), recovered, what, fresh, what)
	}
	lanesRead := map[string]float64{}
	plan.walk(func(n planNode) {
		if n.NodeType == "Seq Scan" || strings.HasPrefix(n.NodeType, "Bitmap") || n.NodeType == "Hash Join" || n.NodeType == "Merge Join" {
			t.Errorf("plan has a %s on %s: a read of a whole table or index range", n.NodeType, n.Relation)
		}
		if n.NodeType == "Sort" && slices.ContainsFunc(n.Plans, func(c planNode) bool { return c.Relation == "hubsync_lane_outbound" }) {
			t.Errorf("plan sorts the due lanes")
		}
		if n.Relation == "hubsync_lane_outbound" && n.NodeType == "Index Scan" && n.Index != "hubsync_lane_outbound_pkey" {
			lanesRead[n.Index] += (n.ActualRows + n.RemovedFilter) * n.ActualLoops
		}
	})
	if lanesRead["idx_lane_outbound_claimed"] != 100 || lanesRead["idx_lane_outbound_free"] != 50 || len(lanesRead) != 2 {
		t.Errorf("the claim read lanes %v, want 100 from idx_lane_outbound_claimed and 50 from idx_lane_outbound_free", lanesRead)
	}
	if rows > 20*float64(len(evs)) {
		t.Errorf("the claim read %.0f event rows to return %d: its cost depends on the backlog", rows, len(evs))
	}
}
