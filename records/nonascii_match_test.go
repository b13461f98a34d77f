package records

import (
	"context"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// TestMatchByEmailNonASCIICapital: a HubSpot contact created with the
// lower-case address of an unlinked local contact stored with capitals
// beyond ASCII matches it, on every database (SQLite's lower() folds ASCII
// only), rather than making a second record.
func TestMatchByEmailNonASCIICapital(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		ada, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "ÄDA@Example.com", "first_name": "Ada"})
		if err != nil {
			t.Fatal(err)
		}
		ch := change(store.EventCreate, "501", b.clock.Now(), map[string]any{"email": "äda@example.com", "first_name": "Ada"})
		ch.MatchField, ch.MatchValue = "email", "äda@example.com"
		if res := mustApply(t, b, ch); res.RecordID != ada.ID {
			t.Fatalf("HubSpot's äda@example.com went to record %s; want the local ÄDA@Example.com, %s", res.RecordID, ada.ID)
		}
		if n := b.count(t, "hubsync_record"); n != 1 {
			t.Fatalf("%d records; want 1", n)
		}
	})
}
