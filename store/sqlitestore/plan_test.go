package sqlitestore_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/storetest"
)

var tableScan = regexp.MustCompile(`SCAN (e|x|t|_System_IntegrationOutbound)( |$)`)

// TestClaimPlanUsesIndex checks that with a backlog (small: modernc SQLite is
// slow under -race, and its planner needs no size to pick the index), most of it processed
// history, the claim reads the claim index rather than scanning the table.
func TestClaimPlanUsesIndex(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newStore(t, store.Config{Now: func() time.Time { return base.Add(time.Hour) }})
	if err := storetest.FillOutbound(ctx, s, "hubspot", "h", 6000, base); err != nil {
		t.Fatal(err)
	}
	if err := storetest.FillOutbound(ctx, s, "other", "o", 1000, base); err != nil {
		t.Fatal(err)
	}
	// Most of the table is finished history.
	if _, err := s.DB().ExecContext(ctx, `UPDATE _System_IntegrationOutbound SET Status = 'processed', ProcessedDate = CreatedDate WHERE Id < 'h0000005000'`); err != nil {
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
	if !strings.Contains(text, "SEARCH e USING INDEX idx_outbound_claim (Destination=? AND Status=?)") {
		t.Errorf("claim plan does not read candidates from idx_outbound_claim")
	}
	for _, row := range plan {
		if tableScan.MatchString(row) {
			t.Errorf("claim plan scans the table: %s", row)
		}
	}
}
