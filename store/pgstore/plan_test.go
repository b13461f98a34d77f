package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/storetest"
)

// TestClaimPlanUsesIndex checks that with a large backlog, most of it processed
// history, the claim reads the record lanes' due index in order (no sort of
// the due lanes) and never scans the queue table.
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
	t.Logf("plan:\n%s", text)
	if strings.Contains(text, "Seq Scan on _system_integrationoutbound") {
		t.Errorf("claim plan scans the table")
	}
	if !strings.Contains(text, "Index Scan using idx_lane_outbound_due on hubsync_lane_outbound") {
		t.Errorf("claim plan does not read the lanes' (Destination, DueDate, HeadId) index")
	}
	if strings.Contains(text, "Sort Key: n.duedate") || strings.Contains(text, "Seq Scan on hubsync_lane_outbound") {
		t.Errorf("claim plan reads every due lane and sorts them")
	}
}
