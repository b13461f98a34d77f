package dispatch

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/storetest"
)

// TestPublishLockProbeWithStaleStatistics checks that the MySQL publish claim
// (publish_lock) looks up each candidate's earlier events by its record key,
// whatever the statistics say. With the statistics of the empty table, kept
// while a backlog of 18,000 events of 7,000 records is filled (InnoDB
// recomputes them in the background, after 10 % of the rows changed), MariaDB
// probed each candidate's record through idx_outbound_poll on Destination
// alone, reading the whole backlog per candidate, as the outbound claim did
// (store/mysqlstore's TestClaimHeadProbeWithStaleStatistics).
func TestPublishLockProbeWithStaleStatistics(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now := base.Add(time.Hour)
	db := dbtest.Migrated(t, store.MySQL)
	st, err := hubsync.NewStore(db.DB, store.MySQL, store.Config{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"ANALYZE TABLE _System_IntegrationOutbound",
		"ALTER TABLE _System_IntegrationOutbound STATS_AUTO_RECALC = 0",
	} {
		rows, err := db.DB.QueryContext(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		rows.Close()
	}
	if err := storetest.FillOutboundRecords(ctx, st, "hubspot", "h", 18000, 7000, base); err != nil {
		t.Fatal(err)
	}
	p, err := newPubStore(st)
	if err != nil {
		t.Fatal(err)
	}
	plan := explainMySQL(t, db.DB, p.q.Get("publish_lock"), "hubspot", now, now, 100)
	var probes int
	for _, cols := range plan {
		if cols[2] != "x" {
			continue
		}
		probes++
		if !strings.Contains(cols[7], "RecordID") {
			t.Errorf("publish_lock probes a candidate's earlier events through %s by %q, not by its record key: %s", cols[5], cols[7], strings.Join(cols, " | "))
		}
	}
	if probes == 0 {
		t.Errorf("no probe of a candidate's earlier events (table x) in publish_lock's plan")
	}
}

// explainMySQL returns MySQL's EXPLAIN of query with args, each row's columns
// (id, select_type, table, type, possible_keys, key, key_len, ref, rows,
// Extra), and logs it. It runs in a transaction that is rolled back: EXPLAIN of
// a locking read takes locks on MySQL.
func explainMySQL(t *testing.T, db *sql.DB, query string, args ...any) [][]string {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	rows, err := tx.Query("EXPLAIN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	var text []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = v.String
		}
		if len(row) < 10 {
			t.Fatalf("unexpected EXPLAIN row %q", row)
		}
		out = append(out, row)
		text = append(text, strings.Join(row, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("plan (id | select_type | table | type | possible_keys | key | key_len | ref | rows | Extra):\n%s", strings.Join(text, "\n"))
	return out
}
