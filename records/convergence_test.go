package records

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hubsync/hubsync/apply"
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

// TestLocalDeleteNotUndone: a local delete leaves a tombstone for the record's
// HubSpot id, so that after the outbound worker archived the object and dropped
// the link, a HubSpot edit made before the archive (even after the local
// delete) creates no record; a HubSpot restore does.
func TestLocalDeleteNotUndone(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		t0 := b.clock.Now()
		rec, err := b.svc.Insert(ctx, "contacts", map[string]any{"name": "Ann"})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.links.Link(ctx, "hubspot", "contacts", rec.ID, "9"); err != nil {
			t.Fatal(err)
		}
		b.clock.Set(t0.Add(time.Minute))
		if err := b.svc.Delete(ctx, "contacts", rec.ID, 1); err != nil {
			t.Fatal(err)
		}
		// The outbound worker archives 9 and drops the link.
		if err := b.links.Unlink(ctx, "hubspot", "contacts", rec.ID); err != nil {
			t.Fatal(err)
		}
		for _, late := range []time.Duration{30 * time.Second, 2 * time.Minute} {
			res := mustApply(t, b, change(store.EventUpdate, "9", t0.Add(late), map[string]any{"name": "Late"}))
			if res.Outcome != apply.Stale {
				t.Fatalf("HubSpot edit at +%s after the local delete = %+v; want stale", late, res)
			}
		}
		if n := b.count(t, "hubsync_record"); n != 0 {
			t.Fatalf("%d records after late edits of a locally deleted record; want 0", n)
		}
		res := mustApply(t, b, change(store.EventRestore, "9", t0.Add(5*time.Minute), map[string]any{"name": "Restored"}))
		if res.Outcome != apply.Created {
			t.Fatalf("restore = %+v; want created", res)
		}
		got, err := b.svc.Get(ctx, "contacts", res.RecordID)
		if err != nil || got.Fields["name"] != "Restored" {
			t.Fatalf("restored record = %+v, %v", got, err)
		}
	})
}
