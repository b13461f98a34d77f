package pgstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/pgstore"
	"github.com/hubsync/hubsync/store/storetest"
)

// TestClaimPlanUsesIndex checks that with a large backlog, most of it processed
// history, the claim function's statement reads the record lanes' two due
// indexes in order (the lanes of records claimed before, then the others:
// migrations 023, 024), with no sort of the due lanes, and never scans a table, in the plan it
// ran (explainedClaim).
func TestClaimPlanUsesIndex(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tdb := dbtest.Migrated(t, store.Postgres)
	cfg := store.Config{Now: func() time.Time { return base.Add(time.Hour) }}
	s, err := pgstore.New(tdb.DB, cfg)
	if err != nil {
		t.Fatal(err)
	}
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
	plan := explainedClaim(t, tdb.URL, cfg, store.ClaimParams{Key: "hubspot", Limit: 100})
	t.Logf("plan:\n%s", plan.shape())
	dueIndexes := map[string]bool{}
	plan.walk(func(n planNode) {
		if n.NodeType == "Seq Scan" {
			t.Errorf("claim plan scans %s", n.Relation)
		}
		if n.NodeType == "Index Scan" && n.Relation == "hubsync_lane_outbound" {
			dueIndexes[n.Index] = true
		}
		if n.NodeType == "Sort" && n.CTEName == "" && slices.ContainsFunc(n.Plans, func(c planNode) bool { return c.Relation == "hubsync_lane_outbound" }) {
			t.Errorf("claim plan reads every due lane and sorts them")
		}
	})
	for _, ix := range []string{"idx_lane_outbound_claimed", "idx_lane_outbound_free"} {
		if !dueIndexes[ix] {
			t.Errorf("claim plan does not read the lanes' (Destination, DueDate, HeadId) index %s", ix)
		}
	}
}
