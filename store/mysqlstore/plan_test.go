package mysqlstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/storetest"
)

// TestClaimPlanUsesIndex checks that with a large backlog, most of it processed
// history, the claim reads the claim index rather than scanning the table.
func TestClaimPlanUsesIndex(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newStore(t, store.Config{Now: func() time.Time { return base.Add(time.Hour) }})
	if err := storetest.FillOutbound(ctx, s, "hubspot", "h", 60000, base); err != nil {
		t.Fatal(err)
	}
	if err := storetest.FillOutbound(ctx, s, "other", "o", 10000, base); err != nil {
		t.Fatal(err)
	}
	// Most of the table is finished history.
	if _, err := s.DB().ExecContext(ctx, `UPDATE _System_IntegrationOutbound SET Status = 'processed', ProcessedDate = CreatedDate WHERE Id < 'h0000050000'`); err != nil {
		t.Fatal(err)
	}
	if err := storetest.Analyze(ctx, s); err != nil {
		t.Fatal(err)
	}
	plan, err := s.ExplainClaim(ctx, store.DirectionOutbound, store.ClaimParams{Key: "hubspot", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	t.Logf("plan (id | select_type | table | type | possible_keys | key | key_len | ref | rows | Extra):\n%s", text)
	var sawClaimIndex bool
	for _, row := range plan {
		cols := strings.Split(row, " | ")
		if len(cols) < 6 {
			t.Fatalf("unexpected EXPLAIN row %q", row)
		}
		if cols[3] == "ALL" {
			t.Errorf("claim plan scans table %s: %s", cols[2], row)
		}
		if cols[2] == "e" && (cols[5] == "idx_outbound_claim" || cols[5] == "idx_outbound_poll") {
			sawClaimIndex = true
		}
	}
	if !sawClaimIndex {
		t.Errorf("claim plan does not read the candidates from the (Destination, Status, CreatedDate) index")
	}
}

// TestClaimHeadProbeWithStaleStatistics checks that the claim looks up each
// candidate's earlier events by its record key, whatever the statistics say.
// MariaDB's statistics of a table that filled up fast (InnoDB recomputes them
// in the background, after 10 % of the rows changed) made it probe each
// candidate's record through idx_outbound_poll on Destination alone: every
// probe read the whole backlog, a claim over a backlog of 18,000 events of
// 7,000 records took 5–10 s, leases ran out before the cycles that claimed
// them started, and the outbound worker stalled for four minutes in a chaos
// run. The statistics here are those of the empty table, kept while the
// backlog is filled.
func TestClaimHeadProbeWithStaleStatistics(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newStore(t, store.Config{Now: func() time.Time { return base.Add(time.Hour) }})
	for _, q := range []string{
		"ANALYZE TABLE _System_IntegrationOutbound",
		"ALTER TABLE _System_IntegrationOutbound STATS_AUTO_RECALC = 0",
	} {
		rows, err := s.DB().QueryContext(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		rows.Close()
	}
	if err := storetest.FillOutboundRecords(ctx, s, "hubspot", "h", 18000, 7000, base); err != nil {
		t.Fatal(err)
	}
	plan, err := s.ExplainClaim(ctx, store.DirectionOutbound, store.ClaimParams{Key: "hubspot", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("plan (id | select_type | table | type | possible_keys | key | key_len | ref | rows | Extra):\n%s", strings.Join(plan, "\n"))
	var probes int
	for _, row := range plan {
		cols := strings.Split(row, " | ")
		if len(cols) < 8 {
			t.Fatalf("unexpected EXPLAIN row %q", row)
		}
		if cols[2] != "x" {
			continue
		}
		probes++
		if !strings.Contains(cols[7], "RecordID") {
			t.Errorf("the claim probes a candidate's earlier events through %s by %q, not by its record key: %s", cols[5], cols[7], row)
		}
	}
	if probes == 0 {
		t.Errorf("no probe of a candidate's earlier events (table x) in the claim's plan")
	}
}

// TestClaimProbesWithStaleStatistics checks, for each queue, that every claim
// statement looks up a candidate's earlier events (the "unblocked" probe, x)
// and a head's followers (f) by the candidate's whole record key, whatever the
// statistics say: TestClaimHeadProbeWithStaleStatistics for all the
// statements that probe, on all three queues. With the statistics of the
// empty tables, kept while they filled up, and without the FORCE INDEX of the
// "unblocked" template, MariaDB probed the outbound queue through
// idx_outbound_poll on Destination alone and the inbound queue through
// idx_inbound_expiry on Source alone, reading the whole backlog per
// candidate; without ClaimLockFollowers' FORCE INDEX, it read the followers of
// every queue by a range over a status index or a full scan.
func TestClaimProbesWithStaleStatistics(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now := base.Add(time.Hour)
	s := newStore(t, store.Config{Now: func() time.Time { return now }})
	db := s.DB()
	tables := []string{"_System_IntegrationOutbound", "_System_IntegrationInbound", "_System_OutboxEvent"}
	dbtest.FreezeEmptyStatistics(t, db, tables...)
	if err := storetest.FillOutboundRecords(ctx, s, "hubspot", "h", 20000, 7000, base); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO _System_IntegrationInbound (Id, Source, ExternalID, ObjectType, EventType, Payload, IdempotencyKey,
    Status, CreatedDate, LastModifiedDate, NextAttemptDate, Seq, Lane)
SELECT CONCAT('i', LPAD(s.seq, 10, '0')), 'hubspot', CONCAT('i', (s.seq - 1) % 7000 + 1), 'contacts', 'update', '{}',
    CONCAT('k', s.seq), 'pending', TIMESTAMPADD(MICROSECOND, s.seq, ?), ?, ?, (s.seq - 1) DIV 7000 + 1, (s.seq - 1) DIV 7000 + 1
FROM seq_1_to_20000 AS s`,
		`INSERT INTO _System_OutboxEvent (Id, EventType, ObjectType, RecordID, Payload, Status,
    CreatedDate, LastModifiedDate, NextAttemptDate, Seq, Lane)
SELECT CONCAT('o', LPAD(s.seq, 10, '0')), 'update', 'contacts', CONCAT('o', (s.seq - 1) % 7000 + 1), '{}',
    'pending', TIMESTAMPADD(MICROSECOND, s.seq, ?), ?, ?, (s.seq - 1) DIV 7000 + 1, (s.seq - 1) DIV 7000 + 1
FROM seq_1_to_20000 AS s`,
	} {
		if _, err := db.ExecContext(ctx, q, base, base, base); err != nil {
			t.Fatal(err)
		}
	}
	// A processed history, and leases: some live, some run out.
	for _, x := range []struct{ table, prefix string }{{tables[0], "h"}, {tables[1], "i"}, {tables[2], "o"}} {
		for _, q := range []struct {
			set  string
			args []any
		}{
			{"Status = 'processed', ProcessedDate = CreatedDate WHERE Id < '" + x.prefix + "0000007001'", nil},
			{"Status = 'processing', LeaseOwner = 'w', Attempt = 1, LeaseExpiresDate = ? WHERE Id BETWEEN '" + x.prefix + "0000007001' AND '" + x.prefix + "0000007200'", []any{now.Add(time.Minute)}},
			{"Status = 'processing', LeaseOwner = 'w', Attempt = 1, LeaseExpiresDate = ? WHERE Id BETWEEN '" + x.prefix + "0000007201' AND '" + x.prefix + "0000007400'", []any{now.Add(-time.Minute)}},
		} {
			if _, err := db.ExecContext(ctx, "UPDATE "+x.table+" SET "+q.set, q.args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	dbtest.ReopenTables(t, db, tables...)
	for _, q := range []struct {
		dir    store.Direction
		key    string
		prefix string
		record []string // the record key's columns
	}{
		{store.DirectionOutbound, "hubspot", "h", []string{"Destination", "ObjectType", "RecordID"}},
		{store.DirectionInbound, "hubspot", "i", []string{"Source", "ObjectType", "ExternalID"}},
		{store.DirectionInternal, "", "o", []string{"ObjectType", "RecordID"}},
	} {
		params := map[string]any{"key": q.key, "limit": 100, "now": now, "owner": "w", "lease_expires": now.Add(time.Minute),
			"ids": `["` + q.prefix + `0000007100","` + q.prefix + `0000007300","` + q.prefix + `0000009000"]`}
		for _, name := range []string{"ClaimLockPending", "ClaimLockExpired", "ClaimLockIDs", "ClaimLockFollowers", "Pending"} {
			t.Run(string(q.dir)+"/"+name, func(t *testing.T) {
				text, names, ok := s.Query(q.dir, name)
				if !ok {
					t.Fatalf("the %s queue has no query %s", q.dir, name)
				}
				args := make([]any, len(names))
				for i, n := range names {
					v, ok := params[n]
					if !ok {
						t.Fatalf("%s needs parameter @%s", name, n)
					}
					args[i] = v
				}
				var probes int
				for _, cols := range dbtest.ExplainMySQL(t, db, text, args...) {
					if cols[2] != "x" && cols[2] != "f" {
						continue
					}
					probes++
					for _, c := range q.record {
						if !strings.Contains(cols[7], "."+c) {
							t.Errorf("%s probes table %s through %s by %q, not by the whole record key %v: %s", name, cols[2], cols[5], cols[7], q.record, strings.Join(cols, " | "))
							break
						}
					}
				}
				if probes == 0 {
					t.Errorf("no probe of a record's other events (table x or f) in %s's plan", name)
				}
			})
		}
	}
}
