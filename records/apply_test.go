package records

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

func change(kind, ext string, at time.Time, fields map[string]any) apply.Change {
	return apply.Change{Source: "hubspot", ObjectType: "contacts", ExternalID: ext, Kind: kind, Fields: fields, OccurredAt: at}
}

func mustApply(t *testing.T, b *bundle, ch apply.Change) apply.Result {
	t.Helper()
	res, err := b.svc.Apply(outbox.WithSyncSource(context.Background(), ch.Source), ch)
	if err != nil {
		t.Fatalf("apply %s %s: %v", ch.Kind, ch.ExternalID, err)
	}
	return res
}

func TestApplyAntiLoop(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{Destinations: []string{"hubspot", "salesforce"}})
		t0 := b.clock.Now().Add(time.Hour)
		res := mustApply(t, b, change(store.EventCreate, "101", t0, map[string]any{"email": "a@example.com"}))
		if res.Outcome != apply.Created || res.RecordID == "" {
			t.Fatalf("result = %+v", res)
		}
		evs := b.outbound(t, res.RecordID)
		if len(evs) != 1 || evs[0].Destination != "salesforce" {
			t.Fatalf("outbound = %+v; want one event, for salesforce only", evs)
		}
		if !evs[0].Payload.SyncSourced("hubspot") {
			t.Fatalf("payload metadata = %v; want sync_source hubspot", evs[0].Payload.Metadata)
		}
		ins := b.internal(t, res.RecordID)
		if len(ins) != 1 || ins[0].Metadata["sync_source"] != "hubspot" || ins[0].Payload.Metadata["sync_source"] != "hubspot" {
			t.Fatalf("internal = %+v; want one event marked sync_source hubspot", ins)
		}
		ext, ok, err := b.links.Lookup(context.Background(), "hubspot", "contacts", res.RecordID)
		if err != nil || !ok || ext != "101" {
			t.Fatalf("link = %q %v %v", ext, ok, err)
		}
		// A local change goes everywhere.
		if _, err := b.svc.Update(context.Background(), "contacts", res.RecordID, 1, map[string]any{"name": "Ann"}); err != nil {
			t.Fatal(err)
		}
		evs = b.outbound(t, res.RecordID)
		if len(evs) != 3 || evs[1].Destination == evs[2].Destination || evs[1].Payload.SyncSourced("hubspot") {
			t.Fatalf("outbound after a local update = %+v", evs)
		}
		// Apply marks the context itself, so a caller that forgot cannot loop.
		res2, err := b.svc.Apply(context.Background(), change(store.EventCreate, "102", t0, map[string]any{"email": "b@example.com"}))
		if err != nil {
			t.Fatal(err)
		}
		if evs := b.outbound(t, res2.RecordID); len(evs) != 1 || evs[0].Destination != "salesforce" {
			t.Fatalf("outbound of an unmarked apply = %+v", evs)
		}
	})
}

func TestApplyMonotonicGuard(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		t0 := b.clock.Now().Add(time.Hour)
		res := mustApply(t, b, change(store.EventCreate, "7", t0, map[string]any{"email": "a@example.com", "name": "A"}))
		id := res.RecordID

		older := mustApply(t, b, change(store.EventUpdate, "7", t0.Add(-time.Second), map[string]any{"name": "old"}))
		equal := mustApply(t, b, change(store.EventUpdate, "7", t0, map[string]any{"name": "same time"}))
		if older.Outcome != apply.Stale || equal.Outcome != apply.Stale || !slices.Equal(equal.Stale, []string{"name"}) {
			t.Fatalf("older = %+v, equal = %+v; want both stale", older, equal)
		}
		newer := mustApply(t, b, change(store.EventUpdate, "7", t0.Add(time.Second), map[string]any{"name": "B", "phone": "1"}))
		if newer.Outcome != apply.Updated || !slices.Equal(newer.Applied, []string{"name", "phone"}) {
			t.Fatalf("newer = %+v", newer)
		}
		// Nanoseconds below the clocks' microsecond precision must not make a
		// replay look newer.
		mixed := change(store.EventUpdate, "7", t0.Add(2*time.Second+500), map[string]any{"email": "b@example.com", "name": "C"})
		r1 := mustApply(t, b, mixed)
		r2 := mustApply(t, b, mixed) // a duplicate delivery
		if r1.Outcome != apply.Updated || r2.Outcome != apply.Stale || len(r2.Applied) != 0 {
			t.Fatalf("first = %+v, duplicate = %+v", r1, r2)
		}
		rec, err := b.svc.Get(ctx, "contacts", id)
		if err != nil || rec.Fields["name"] != "C" || rec.Fields["email"] != "b@example.com" || rec.Fields["phone"] != "1" || rec.Version != 3 {
			t.Fatalf("record = %+v, %v", rec, err)
		}
		if n := len(b.internal(t, id)); n != 3 {
			t.Fatalf("%d internal events, want 3 (create + 2 updates; stale and duplicate write none)", n)
		}
		if n := len(b.outbound(t, id)); n != 0 {
			t.Fatalf("%d outbound events to hubspot for hubspot-sourced changes", n)
		}

		// A local edit advances the field's clock to the store's now, so an
		// older HubSpot change of that field cannot overwrite it.
		b.clock.Set(t0.Add(time.Minute))
		if _, err := b.svc.Update(ctx, "contacts", id, 3, map[string]any{"name": "local"}); err != nil {
			t.Fatal(err)
		}
		late := mustApply(t, b, change(store.EventUpdate, "7", t0.Add(30*time.Second), map[string]any{"name": "hubspot", "phone": "2"}))
		if !slices.Equal(late.Stale, []string{"name"}) || !slices.Equal(late.Applied, []string{"phone"}) {
			t.Fatalf("late = %+v; want name stale, phone applied", late)
		}
		rec, _ = b.svc.Get(ctx, "contacts", id)
		if rec.Fields["name"] != "local" || rec.Fields["phone"] != "2" {
			t.Fatalf("record = %+v", rec.Fields)
		}
		// Removing a field through Apply.
		mustApply(t, b, change(store.EventUpdate, "7", t0.Add(2*time.Minute), map[string]any{"phone": nil}))
		rec, _ = b.svc.Get(ctx, "contacts", id)
		if _, ok := rec.Fields["phone"]; ok {
			t.Fatalf("phone not removed: %+v", rec.Fields)
		}
	})
}

func TestApplyMatchByEmail(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		local, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "a@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		ch := change(store.EventCreate, "55", b.clock.Now().Add(time.Hour), map[string]any{"email": "a@example.com", "name": "Ann"})
		ch.MatchField, ch.MatchValue = "email", "a@example.com"
		res := mustApply(t, b, ch)
		if res.RecordID != local.ID || res.Outcome != apply.Updated {
			t.Fatalf("result = %+v; want the local record %s linked and updated", res, local.ID)
		}
		if ext, ok, _ := b.links.Lookup(ctx, "hubspot", "contacts", local.ID); !ok || ext != "55" {
			t.Fatalf("link = %q %v", ext, ok)
		}
		// A second HubSpot contact with the same email does not steal the
		// linked record.
		ch.ExternalID = "56"
		if res := mustApply(t, b, ch); res.RecordID == local.ID || res.Outcome != apply.Created {
			t.Fatalf("second match = %+v", res)
		}
		bad := ch
		bad.MatchField = `email"]`
		if _, err := b.svc.Apply(ctx, bad); !errors.Is(err, apply.ErrPermanent) {
			t.Fatalf("bad match field: %v, want ErrPermanent", err)
		}
	})
}

// TestApplyMatchByOtherField: a mapping whose id_field is neither email nor
// $id matches through record_find_unlinked: an unlinked record with the
// value is linked, a linked one is never taken, and a record whose field
// holds a longer value is not a match.
func TestApplyMatchByOtherField(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"phone": "555-0100 ext 2"}); err != nil {
			t.Fatal(err)
		}
		local, err := b.svc.Insert(ctx, "contacts", map[string]any{"phone": "555-0100"})
		if err != nil {
			t.Fatal(err)
		}
		ch := change(store.EventCreate, "61", b.clock.Now().Add(time.Hour), map[string]any{"phone": "555-0100", "name": "Ann"})
		ch.MatchField, ch.MatchValue = "phone", "555-0100"
		if res := mustApply(t, b, ch); res.RecordID != local.ID || res.Outcome != apply.Updated {
			t.Fatalf("result = %+v; want the local record %s linked and updated", res, local.ID)
		}
		if ext, ok, _ := b.links.Lookup(ctx, "hubspot", "contacts", local.ID); !ok || ext != "61" {
			t.Fatalf("link = %q %v; want 61", ext, ok)
		}
		ch.ExternalID = "62"
		if res := mustApply(t, b, ch); res.RecordID == local.ID || res.Outcome != apply.Created {
			t.Fatalf("second match = %+v; want a new record, the linked one kept", res)
		}
	})
}

// TestApplyMatchByRecordID: an object whose id property holds the local
// record id (companies and deals of the default mapping) is matched to that
// record when it is not linked yet.
func TestApplyMatchByRecordID(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		local, err := b.svc.Insert(ctx, "contacts", map[string]any{"name": "Acme"})
		if err != nil {
			t.Fatal(err)
		}
		ch := change(store.EventUpdate, "88", b.clock.Now().Add(time.Hour), map[string]any{"name": "Acme Corp"})
		ch.MatchField, ch.MatchValue = mapping.RecordIDField, local.ID
		res := mustApply(t, b, ch)
		if res.RecordID != local.ID || res.Outcome != apply.Updated {
			t.Fatalf("result = %+v; want the local record %s linked and updated", res, local.ID)
		}
		if ext, ok, _ := b.links.Lookup(ctx, "hubspot", "contacts", local.ID); !ok || ext != "88" {
			t.Fatalf("link = %q %v", ext, ok)
		}
		// Another object naming the same, now linked, record gets its own.
		ch.ExternalID = "89"
		if res := mustApply(t, b, ch); res.RecordID == local.ID || res.Outcome != apply.Created {
			t.Fatalf("second match = %+v", res)
		}
		// An id of no record matches nothing.
		ch.ExternalID, ch.MatchValue = "90", "no-such-record"
		if res := mustApply(t, b, ch); res.RecordID == local.ID || res.Outcome != apply.Created {
			t.Fatalf("unknown id match = %+v", res)
		}
	})
}

func TestApplyDeleteMergePrivacy(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{Destinations: []string{"hubspot", "warehouse"}})
		ctx := context.Background()
		t0 := b.clock.Now().Add(time.Hour)

		// Delete: the record goes, a late update is stale, a newer restore
		// brings it back under the same id.
		a := mustApply(t, b, change(store.EventCreate, "1", t0, map[string]any{"email": "a@example.com"}))
		del := mustApply(t, b, change(store.EventDelete, "1", t0.Add(time.Minute), nil))
		if del.Outcome != apply.Deleted {
			t.Fatalf("delete = %+v", del)
		}
		if again := mustApply(t, b, change(store.EventDelete, "1", t0.Add(time.Minute), nil)); again.Outcome != apply.Ignored {
			t.Fatalf("duplicate delete = %+v", again)
		}
		if _, err := b.svc.Get(ctx, "contacts", a.RecordID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("get after delete: %v", err)
		}
		if late := mustApply(t, b, change(store.EventUpdate, "1", t0.Add(30*time.Second), map[string]any{"email": "x"})); late.Outcome != apply.Stale {
			t.Fatalf("update older than the delete = %+v; want stale", late)
		}
		if _, err := b.svc.Get(ctx, "contacts", a.RecordID); !errors.Is(err, ErrNotFound) {
			t.Fatal("a late update resurrected a deleted record")
		}
		restored := mustApply(t, b, change(store.EventRestore, "1", t0.Add(2*time.Minute), map[string]any{"email": "a@example.com"}))
		if restored.Outcome != apply.Created || restored.RecordID != a.RecordID {
			t.Fatalf("restore = %+v", restored)
		}
		wh := b.outbound(t, a.RecordID)
		if len(wh) != 3 || wh[1].EventType != store.EventDelete || wh[1].Destination != "warehouse" || wh[2].EventType != store.EventCreate {
			t.Fatalf("warehouse events = %+v", wh)
		}

		// Merge into a survivor without a local record: re-pointed.
		m := mustApply(t, b, change(store.EventCreate, "2", t0, map[string]any{"email": "m@example.com"}))
		mr := change(store.EventMerge, "3", t0.Add(time.Minute), map[string]any{"name": "Merged"})
		mr.MergedIDs = []string{"2"}
		res := mustApply(t, b, mr)
		if res.Outcome != apply.Merged || res.RecordID != m.RecordID {
			t.Fatalf("merge = %+v; want record %s re-pointed", res, m.RecordID)
		}
		if id, ok, _ := b.links.LookupRecord(ctx, "hubspot", "contacts", "3"); !ok || id != m.RecordID {
			t.Fatalf("survivor link = %q %v", id, ok)
		}
		if _, ok, _ := b.links.LookupRecord(ctx, "hubspot", "contacts", "2"); ok {
			t.Fatal("merged id still linked")
		}
		if again := mustApply(t, b, mr); len(again.Applied) != 0 {
			t.Fatalf("duplicate merge applied %v", again.Applied)
		}

		// Merge when the survivor has its own record: the merged one is deleted.
		x := mustApply(t, b, change(store.EventCreate, "4", t0, map[string]any{"email": "x@example.com"}))
		mr = change(store.EventMerge, "3", t0.Add(2*time.Minute), nil)
		mr.MergedIDs = []string{"4"}
		if res := mustApply(t, b, mr); res.RecordID != m.RecordID {
			t.Fatalf("merge 2 = %+v", res)
		}
		if _, err := b.svc.Get(ctx, "contacts", x.RecordID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("merged-away record still there: %v", err)
		}
		if _, err := b.svc.Get(ctx, "contacts", m.RecordID); err != nil {
			t.Fatalf("survivor gone: %v", err)
		}

		// Privacy delete: no field values in the events, no field clocks left.
		p := mustApply(t, b, change(store.EventCreate, "9", t0, map[string]any{"email": "secret@example.com"}))
		// What the outbound worker stored when it last wrote the record.
		if err := b.links.PushedMany(ctx, "hubspot", "contacts", []links.Pushed{{RecordID: p.RecordID, ExternalID: "9", Version: 1, Seq: 1,
			Fields: map[string]any{"email": "secret@example.com"}}}); err != nil {
			t.Fatal(err)
		}
		if res := mustApply(t, b, change(store.EventPrivacyDelete, "9", t0.Add(time.Minute), nil)); res.Outcome != apply.Deleted {
			t.Fatalf("privacy delete = %+v", res)
		}
		evs := b.outbound(t, p.RecordID)
		if len(evs) == 0 {
			t.Fatalf("no outbound events for record %s, want its create and its privacy delete", p.RecordID)
		}
		last := evs[len(evs)-1]
		if last.EventType != store.EventDelete || len(last.Payload.Fields) != 0 || len(last.Old.Fields) != 0 {
			t.Fatalf("privacy delete event carries fields: %+v / %+v", last.Payload, last.Old)
		}
		var clocks int
		if err := b.st.DB().QueryRow(dialectsql.Rebind(b.d, "SELECT COUNT(*) FROM hubsync_field_clock WHERE RecordID = ? AND Field <> '$deleted'"), p.RecordID).Scan(&clocks); err != nil {
			t.Fatal(err)
		}
		if pushed, err := b.links.LookupPushedMany(ctx, "hubspot", "contacts", []string{p.RecordID}); err != nil || len(pushed) != 0 {
			t.Fatalf("pushed states after a privacy delete: %+v, %v; want none (they hold the record's values)", pushed, err)
		}
		if clocks != 0 {
			t.Fatalf("%d field clocks left after a privacy delete", clocks)
		}

		// Invalid changes are permanent errors.
		for _, ch := range []apply.Change{
			change(store.EventUpdate, "", t0, nil),
			change(store.EventUpdate, "1", time.Time{}, nil),
			{Source: "hubspot", ObjectType: "Bad Type", ExternalID: "1", Kind: store.EventUpdate, OccurredAt: t0},
		} {
			if _, err := b.svc.Apply(ctx, ch); !errors.Is(err, apply.ErrPermanent) {
				t.Errorf("apply %+v: %v, want ErrPermanent", ch, err)
			}
		}
	})
}
