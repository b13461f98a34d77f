package records

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// TestUnchangedSaveKeepsClocks: a local save that rewrites a field with its
// current value does not move the field's clock, so a HubSpot edit made
// between the original write and that save, whose webhook arrives later, is
// still applied; a field whose value did change is guarded as before.
func TestUnchangedSaveKeepsClocks(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		t0 := b.clock.Now()
		rec, err := b.svc.Insert(ctx, "contacts", map[string]any{"name": "Ann", "phone": "1"})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.links.Link(ctx, "hubspot", "contacts", rec.ID, "9"); err != nil {
			t.Fatal(err)
		}
		// The PATCH at t0+2m names name with its value unchanged, phone with a new one.
		b.clock.Set(t0.Add(2 * time.Minute))
		up, err := b.svc.Update(ctx, "contacts", rec.ID, 1, map[string]any{"name": "Ann", "phone": "2"})
		if err != nil {
			t.Fatal(err)
		}
		// HubSpot changed both at t0+1m; its webhook arrives after the PATCH.
		res := mustApply(t, b, change(store.EventUpdate, "9", t0.Add(time.Minute), map[string]any{"name": "Anna", "phone": "3"}))
		if !slices.Equal(res.Applied, []string{"name"}) || !slices.Equal(res.Stale, []string{"phone"}) {
			t.Fatalf("in-flight HubSpot edit = %+v; want name applied (unchanged by the PATCH), phone stale", res)
		}
		got, err := b.svc.Get(ctx, "contacts", rec.ID)
		if err != nil || got.Fields["name"] != "Anna" || got.Fields["phone"] != "2" || got.Version != up.Version+1 {
			t.Fatalf("record = %+v, %v", got, err)
		}
	})
}
