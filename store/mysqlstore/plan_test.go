package mysqlstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

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
