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

// TestLocalEditNeverMovesClockBack checks that a field clock never goes
// backwards: when HubSpot's occurredAt put a field's clock ahead of local time,
// a local edit of that field (stamped with the earlier local now) leaves the
// clock where it was, so a HubSpot change older than that clock stays stale.
func TestLocalEditNeverMovesClockBack(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		ahead := b.clock.Now().Add(time.Hour) // HubSpot's clock runs an hour ahead of ours
		res := mustApply(t, b, change(store.EventCreate, "7", ahead, map[string]any{"email": "a@example.com", "name": "from hubspot"}))
		if _, err := b.svc.Update(ctx, "contacts", res.RecordID, 1, map[string]any{"name": "local", "phone": "1"}); err != nil {
			t.Fatal(err)
		}
		// Older than the name's clock (ahead) but newer than the local edit.
		older := mustApply(t, b, change(store.EventUpdate, "7", ahead.Add(-time.Second), map[string]any{"name": "older hubspot", "phone": "2"}))
		if older.Outcome == apply.Updated && slices.Contains(older.Applied, "name") {
			t.Fatalf("a HubSpot change older than the name's clock was applied after a local edit: %+v (the local edit moved the clock back)", older)
		}
		if !slices.Equal(older.Stale, []string{"name"}) || !slices.Equal(older.Applied, []string{"phone"}) {
			t.Fatalf("older = %+v; want name stale (its clock is at %s), phone applied (its clock is the local edit's)", older, ahead)
		}
		rec, err := b.svc.Get(ctx, "contacts", res.RecordID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Fields["name"] != "local" || rec.Fields["phone"] != "2" {
			t.Fatalf("record = %+v; want name local, phone 2", rec.Fields)
		}
	})
}

// TestChangeAtTheDeleteInstantStaysDeleted checks the deletion's clock: a
// HubSpot change of a locally deleted record at the delete's instant does not
// bring the record back, nor does a newer update (the local delete archived the
// object: a later edit is a late webhook, issue 11 item 3); a restore newer
// than the delete does.
func TestChangeAtTheDeleteInstantStaysDeleted(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		res := mustApply(t, b, change(store.EventCreate, "9", b.clock.Now().Add(-time.Minute), map[string]any{"email": "gone@example.com"}))
		deletedAt := b.clock.Now().Truncate(time.Microsecond)
		b.clock.Set(deletedAt)
		if err := b.svc.Delete(ctx, "contacts", res.RecordID, 1); err != nil {
			t.Fatal(err)
		}
		same := mustApply(t, b, change(store.EventUpdate, "9", deletedAt, map[string]any{"name": "revived?"}))
		if same.Outcome != apply.Stale {
			t.Fatalf("a change at the delete's instant = %+v; want stale, the record stays deleted", same)
		}
		if _, err := b.svc.Get(ctx, "contacts", res.RecordID); err == nil {
			t.Fatal("the deleted record is back after a change not newer than its deletion")
		}
		newer := mustApply(t, b, change(store.EventUpdate, "9", deletedAt.Add(time.Millisecond), map[string]any{"name": "late"}))
		if newer.Outcome != apply.Stale {
			t.Fatalf("an update newer than the local delete = %+v; want stale until HubSpot restores the object", newer)
		}
		restored := mustApply(t, b, change(store.EventRestore, "9", deletedAt.Add(time.Millisecond), map[string]any{"name": "back"}))
		if restored.Outcome == apply.Stale {
			t.Fatalf("a restore newer than the delete = %+v; want it applied", restored)
		}
		if _, err := b.svc.Get(ctx, "contacts", res.RecordID); err != nil {
			t.Fatalf("the restored record: %v", err)
		}
	})
}

// TestTouchClocksNeverMovesBack checks touchClocks' three statements (one
// name, two names, many) on every database: each inserts a missing clock,
// advances an older one and leaves a newer one where it is.
func TestTouchClocksNeverMovesBack(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		t0 := b.clock.Now().Truncate(time.Microsecond)
		t1, t2 := t0.Add(time.Second), t0.Add(2*time.Second)
		touch := func(names []string, at time.Time) map[string]time.Time {
			t.Helper()
			tx, err := b.svc.db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if err := b.svc.touchClocks(ctx, tx, "contacts", "r1", names, at); err != nil {
				t.Fatal(err)
			}
			got, err := b.svc.clocks(ctx, tx, "contacts", "r1")
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			return got
		}
		for _, tc := range []struct {
			names []string
			at    time.Time
			want  map[string]time.Time
		}{
			{[]string{"a"}, t1, map[string]time.Time{"a": t1}},
			{[]string{"a", apply.SeenClock}, t2, map[string]time.Time{"a": t2, apply.SeenClock: t2}},
			{[]string{"b", "a"}, t1, map[string]time.Time{"a": t2, "b": t1, apply.SeenClock: t2}},
			{[]string{apply.SeenClock}, t0, map[string]time.Time{"a": t2, "b": t1, apply.SeenClock: t2}},
			{[]string{"c", "b", "a"}, t2, map[string]time.Time{"a": t2, "b": t2, "c": t2, apply.SeenClock: t2}},
			{[]string{"d", "c", "b", "a"}, t1, map[string]time.Time{"a": t2, "b": t2, "c": t2, "d": t1, apply.SeenClock: t2}},
		} {
			got := touch(tc.names, tc.at)
			if len(got) != len(tc.want) {
				t.Fatalf("after touching %v at %s: clocks %v; want %v", tc.names, tc.at, got, tc.want)
			}
			for k, w := range tc.want {
				if !got[k].Equal(w) {
					t.Fatalf("after touching %v at %s: clock %s = %s; want %s (all: %v)", tc.names, tc.at, k, got[k], w, got)
				}
			}
		}
	})
}
