package records

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// TestApplyTombstones: deletions and merges leave tombstones per external id,
// so that late, older changes of the id (linked or never seen) are stale, and
// newer changes of a merged-away id reach the survivor's record.
func TestApplyTombstones(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		t0 := b.clock.Now().Add(time.Hour)
		at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
		live := func() int { t.Helper(); return b.count(t, "hubsync_record") }
		expect := func(what string, got, want apply.Outcome) {
			t.Helper()
			if got != want {
				t.Fatalf("%s = %q, want %q", what, got, want)
			}
		}

		// A never-linked id deleted first: its older create, update or restore
		// is stale; a newer create brings it.
		expect("delete unseen", mustApply(t, b, change(store.EventDelete, "5", at(100), nil)).Outcome, apply.Ignored)
		expect("replayed delete", mustApply(t, b, change(store.EventDelete, "5", at(100), nil)).Outcome, apply.Ignored)
		for _, kind := range []string{store.EventUpdate, store.EventCreate, store.EventRestore} {
			for _, s := range []int{50, 100} {
				if res := mustApply(t, b, change(kind, "5", at(s), map[string]any{"name": "Unseen"})); res.Outcome != apply.Stale || res.RecordID != "" {
					t.Fatalf("%s at %d after the deletion = %+v; want stale", kind, s, res)
				}
			}
		}
		if n := live(); n != 0 {
			t.Fatalf("%d records after stale changes of a deleted id", n)
		}
		back := mustApply(t, b, change(store.EventCreate, "5", at(200), map[string]any{"name": "Back"}))
		expect("newer create", back.Outcome, apply.Created)
		// A replayed deletion older than that create does not delete it again.
		expect("late delete", mustApply(t, b, change(store.EventDelete, "5", at(100), nil)).Outcome, apply.Ignored)
		if _, err := b.svc.Get(ctx, "contacts", back.RecordID); err != nil {
			t.Fatalf("a late deletion deleted a newer record: %v", err)
		}

		// Merge 3 into 2 (both with records), and 7 (never seen) into 2.
		two := mustApply(t, b, change(store.EventUpdate, "2", at(0), map[string]any{"name": "Two"}))
		three := mustApply(t, b, change(store.EventUpdate, "3", at(0), map[string]any{"name": "Three"}))
		mr := change(store.EventMerge, "2", at(100), nil)
		mr.MergedIDs = []string{"3", "7"}
		for range 2 { // idempotent
			if res := mustApply(t, b, mr); res.Outcome != apply.Merged || res.RecordID != two.RecordID {
				t.Fatalf("merge = %+v", res)
			}
		}
		if _, err := b.svc.Get(ctx, "contacts", three.RecordID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("merged-away record: %v", err)
		}
		before := live()
		// Older (or equal) changes of the merged-away ids are stale.
		for _, ext := range []string{"3", "7"} {
			for _, s := range []int{50, 100} {
				if res := mustApply(t, b, change(store.EventUpdate, ext, at(s), map[string]any{"name": "Late"})); res.Outcome != apply.Stale {
					t.Fatalf("update of merged %s at %d = %+v; want stale", ext, s, res)
				}
			}
			if res := mustApply(t, b, change(store.EventCreate, ext, at(60), map[string]any{"name": "Late"})); res.Outcome != apply.Stale {
				t.Fatalf("create of merged %s = %+v; want stale", ext, res)
			}
		}
		if n := live(); n != before {
			t.Fatalf("%d records after late changes of merged ids, want %d", n, before)
		}
		// A newer change of a merged-away id is redirected to the survivor.
		res := mustApply(t, b, change(store.EventUpdate, "7", at(150), map[string]any{"name": "Via7"}))
		if res.Outcome != apply.Updated || res.RecordID != two.RecordID {
			t.Fatalf("newer update of merged 7 = %+v; want the survivor %s updated", res, two.RecordID)
		}
		if rec, _ := b.svc.Get(ctx, "contacts", two.RecordID); rec.Fields["name"] != "Via7" {
			t.Fatalf("survivor fields = %v", rec.Fields)
		}
		// The deletion of a merged-away id does not reach the survivor.
		expect("delete of merged 3", mustApply(t, b, change(store.EventDelete, "3", at(160), nil)).Outcome, apply.Ignored)
		if _, err := b.svc.Get(ctx, "contacts", two.RecordID); err != nil {
			t.Fatalf("deleting a merged-away id deleted the survivor: %v", err)
		}

		// A chain: 2 is merged into 9 (no record: 2's record is re-pointed).
		mr = change(store.EventMerge, "9", at(200), nil)
		mr.MergedIDs = []string{"2"}
		if res := mustApply(t, b, mr); res.RecordID != two.RecordID {
			t.Fatalf("merge 2 into 9 = %+v", res)
		}
		if res := mustApply(t, b, change(store.EventUpdate, "3", at(180), map[string]any{"name": "x"})); res.Outcome != apply.Stale {
			t.Fatalf("3→2 at 180, 2 merged at 200: %+v; want stale", res)
		}
		if res := mustApply(t, b, change(store.EventUpdate, "3", at(250), map[string]any{"name": "Via3"})); res.Outcome != apply.Updated || res.RecordID != two.RecordID {
			t.Fatalf("3→2→9 at 250 = %+v; want record %s updated", res, two.RecordID)
		}
		// Merged the other way round later: 2, merged away at 200, survives at
		// 300, so its older tombstone goes and it is no longer redirected.
		mr = change(store.EventMerge, "2", at(300), map[string]any{"name": "Two again"})
		mr.MergedIDs = []string{"9"}
		if res := mustApply(t, b, mr); res.Outcome != apply.Merged || res.RecordID != two.RecordID {
			t.Fatalf("merge 9 into 2 = %+v", res)
		}
		if res := mustApply(t, b, change(store.EventUpdate, "2", at(310), map[string]any{"name": "Direct"})); res.Outcome != apply.Updated || res.RecordID != two.RecordID {
			t.Fatalf("update of 2 after it survived = %+v", res)
		}

		// A linked record deleted and restored: a restore not newer than the
		// deletion is stale, a newer one brings it back.
		one := mustApply(t, b, change(store.EventCreate, "1", at(0), map[string]any{"name": "One"}))
		mustApply(t, b, change(store.EventDelete, "1", at(100), nil))
		expect("older restore", mustApply(t, b, change(store.EventRestore, "1", at(90), map[string]any{"name": "One"})).Outcome, apply.Stale)
		if res := mustApply(t, b, change(store.EventRestore, "1", at(110), map[string]any{"name": "One"})); res.Outcome != apply.Created || res.RecordID != one.RecordID {
			t.Fatalf("newer restore = %+v", res)
		}
	})
}

// TestApplyLateDeliveries: HubSpot retries a failed webhook delivery for up to
// a day, so a deletion or merge can arrive after changes that happened later.
// A deletion older than a restore applied before it deletes nothing, and a
// merge into a survivor deleted after it takes the merged record with it,
// whichever arrives first (apply's TestArrivalOrderConverges covers every
// order; this runs the two cases on each database's RecordStore).
func TestApplyLateDeliveries(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		t0 := b.clock.Now()
		at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }

		// 7: created at 0, deleted at 2, restored at 3; the deletion comes last.
		c := mustApply(t, b, change(store.EventCreate, "7", at(0), map[string]any{"name": "Ann", "phone": "1"}))
		mustApply(t, b, change(store.EventRestore, "7", at(3), map[string]any{"name": "Ann", "phone": "1"}))
		if res := mustApply(t, b, change(store.EventDelete, "7", at(2), nil)); res.Outcome != apply.Ignored {
			t.Errorf("deletion at 2 after the restore at 3 = %+v; want ignored", res)
		}
		if got, err := b.svc.Get(ctx, "contacts", c.RecordID); err != nil || got.Fields["name"] != "Ann" || got.Fields["phone"] != "1" {
			t.Errorf("restored record after a late deletion = %+v, %v; want it whole", got, err)
		}

		// 8: created at 0, edited here at 2 (local edits move field clocks
		// too), deleted in HubSpot at 1; the deletion arrives after the
		// edit. It is not stale: no source change after it was applied.
		e := mustApply(t, b, change(store.EventCreate, "8", at(0), map[string]any{"name": "Eve"}))
		b.clock.Set(at(2))
		if _, err := b.svc.Update(ctx, "contacts", e.RecordID, 1, map[string]any{"note": "local"}); err != nil {
			t.Fatal(err)
		}
		if res := mustApply(t, b, change(store.EventDelete, "8", at(1), nil)); res.Outcome != apply.Deleted {
			t.Errorf("HubSpot deletion at 1 after a local edit at 2 = %+v; want the record deleted", res)
		}

		// 2 merged into 1 at 2, 1 deleted at 3; the merge comes last.
		mustApply(t, b, change(store.EventCreate, "1", at(0), map[string]any{"name": "One"}))
		two := mustApply(t, b, change(store.EventCreate, "2", at(0), map[string]any{"name": "Two"}))
		mustApply(t, b, change(store.EventDelete, "1", at(3), nil))
		mr := change(store.EventMerge, "1", at(2), nil)
		mr.MergedIDs = []string{"2"}
		mustApply(t, b, mr)
		if got, err := b.svc.Get(ctx, "contacts", two.RecordID); !errors.Is(err, ErrNotFound) {
			t.Errorf("2's record after its late merge into the deleted 1 = %+v, %v; want it deleted", got, err)
		}
	})
}
