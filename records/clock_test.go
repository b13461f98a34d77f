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
// HubSpot change of a locally deleted record that is not newer than the delete
// (here: at the same instant) does not bring the record back; a newer restore
// does.
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
		// A local delete also tombstones the linked id (apply's local-delete
		// rule): a newer update stays stale too, and only a newer restore in
		// HubSpot brings the record back.
		newer := mustApply(t, b, change(store.EventUpdate, "9", deletedAt.Add(time.Millisecond), map[string]any{"name": "back"}))
		if newer.Outcome != apply.Stale {
			t.Fatalf("an update newer than the local delete = %+v; want stale (the archive is on its way)", newer)
		}
		restored := mustApply(t, b, change(store.EventRestore, "9", deletedAt.Add(time.Millisecond), map[string]any{"name": "back"}))
		if restored.Outcome == apply.Stale {
			t.Fatalf("a restore newer than the delete = %+v; want it applied", restored)
		}
		if _, err := b.svc.Get(ctx, "contacts", res.RecordID); err != nil {
			t.Fatalf("the restore did not bring the record back: %v", err)
		}
	})
}
