package apply_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/store"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func change(kind, ext string, when time.Time, fields map[string]any) apply.Change {
	return apply.Change{Source: "hubspot", ObjectType: "contacts", ExternalID: ext, Kind: kind, Fields: fields, OccurredAt: when}
}

func mustApply(t *testing.T, g *apply.Guarded, ch apply.Change) apply.Result {
	t.Helper()
	res, err := g.Apply(context.Background(), ch)
	if err != nil {
		t.Fatalf("apply %s %s at %s: %v", ch.Kind, ch.ExternalID, ch.OccurredAt, err)
	}
	return res
}

func setup(t *testing.T) (*memStore, *apply.Guarded) {
	t.Helper()
	m := newMemStore()
	return m, &apply.Guarded{Store: m}
}

func TestGuardAppliesOnlyNewerFields(t *testing.T) {
	t.Parallel()
	m, g := setup(t)
	created := mustApply(t, g, change(store.EventCreate, "1", at(10), map[string]any{"name": "Ann", "phone": "1"}))
	if created.Outcome != apply.Created || created.RecordID == "" || !slices.Equal(created.Applied, []string{"name", "phone"}) {
		t.Fatalf("create = %+v", created)
	}
	for _, s := range []int{5, 10} { // older, and equal: a replay
		res := mustApply(t, g, change(store.EventUpdate, "1", at(s), map[string]any{"name": "Old"}))
		if res.Outcome != apply.Stale || !slices.Equal(res.Stale, []string{"name"}) || len(res.Applied) != 0 {
			t.Fatalf("update at %d = %+v; want stale", s, res)
		}
	}
	// Per field: name is newer at 30, phone only at 20.
	mustApply(t, g, change(store.EventUpdate, "1", at(30), map[string]any{"name": "Bea"}))
	res := mustApply(t, g, change(store.EventUpdate, "1", at(20), map[string]any{"name": "Cid", "phone": "2", "city": nil}))
	if res.Outcome != apply.Updated || !slices.Equal(res.Applied, []string{"city", "phone"}) || !slices.Equal(res.Stale, []string{"name"}) {
		t.Fatalf("mixed update = %+v; want city and phone applied, name stale", res)
	}
	if _, f := m.record("hubspot", "contacts", "1"); f["name"] != "Bea" || f["phone"] != "2" {
		t.Fatalf("record = %v; want name Bea (newer) and phone 2", f)
	}
	if res := mustApply(t, g, change(store.EventUpdate, "1", at(40), nil)); res.Outcome != apply.Ignored {
		t.Fatalf("update of no fields = %+v; want ignored", res)
	}
	if got := m.sources; len(got) == 0 || got[0] != "hubspot" {
		t.Fatalf("transactions ran under sync sources %v; want hubspot (anti-loop)", got)
	}
}

// TestGuardMatchKeepsLocalOnlyValues: an object created in HubSpot that
// matches an unlinked local record by email (the record's own write still
// waits to go out) carries no value for the properties only the record has
// set. Read whole, they come as nil at the creation's newer time; they must
// not clear the record's values, which HubSpot never had. Its values win.
func TestGuardMatchKeepsLocalOnlyValues(t *testing.T) {
	t.Parallel()
	m, g := setup(t)
	local := mustApply(t, g, change(store.EventCreate, "x", at(1), map[string]any{"email": "c@example.com", "first_name": "Carol", "phone": "555"}))
	delete(m.state.links, extKey{"hubspot", "contacts", "x"}) // a record made locally, never linked
	ch := change(store.EventCreate, "77", at(5), map[string]any{"email": "c@example.com", "company": "Acme", "first_name": nil, "phone": nil})
	ch.MatchField, ch.MatchValue = "email", "c@example.com"
	if res := mustApply(t, g, ch); res.RecordID != local.RecordID {
		t.Fatalf("matched creation = %+v; want record %s", res, local.RecordID)
	}
	if _, f := m.record("hubspot", "contacts", "77"); f["first_name"] != "Carol" || f["phone"] != "555" || f["company"] != "Acme" {
		t.Fatalf("record = %v; want first_name Carol and phone 555 kept, company Acme added", f)
	}
	// Once linked, a whole read's nil clears: HubSpot cleared it.
	up := change(store.EventCreate, "77", at(9), map[string]any{"email": "c@example.com", "phone": nil})
	mustApply(t, g, up)
	if _, f := m.record("hubspot", "contacts", "77"); f["phone"] != nil {
		t.Fatalf("record = %v; want phone cleared by the linked object's read", f)
	}
}

func TestGuardMatchesUnlinkedRecord(t *testing.T) {
	t.Parallel()
	m, g := setup(t)
	local := mustApply(t, g, change(store.EventCreate, "x", at(1), map[string]any{"email": "a@example.com"}))
	delete(m.state.links, extKey{"hubspot", "contacts", "x"}) // a record made locally, never linked
	ch := change(store.EventUpdate, "55", at(2), map[string]any{"name": "Ann"})
	ch.MatchField, ch.MatchValue = "email", "a@example.com"
	if res := mustApply(t, g, ch); res.Outcome != apply.Updated || res.RecordID != local.RecordID {
		t.Fatalf("matched update = %+v; want record %s updated", res, local.RecordID)
	}
	ch.ExternalID = "56" // the record is linked now; a second id creates its own
	if res := mustApply(t, g, ch); res.Outcome != apply.Created || res.RecordID == local.RecordID {
		t.Fatalf("second match = %+v", res)
	}
}

func TestTombstones(t *testing.T) {
	t.Parallel()
	t.Run("unseen id", func(t *testing.T) {
		m, g := setup(t)
		if res := mustApply(t, g, change(store.EventDelete, "5", at(100), nil)); res.Outcome != apply.Ignored {
			t.Fatalf("delete of an unseen id = %+v", res)
		}
		for _, s := range []int{90, 100} {
			for _, kind := range []string{store.EventCreate, store.EventUpdate, store.EventRestore} {
				if res := mustApply(t, g, change(kind, "5", at(s), map[string]any{"name": "Late"})); res.Outcome != apply.Stale || res.RecordID != "" {
					t.Fatalf("%s at %d after the delete at 100 = %+v; want stale", kind, s, res)
				}
			}
		}
		if len(m.state.records) != 0 {
			t.Fatalf("records %v; a change older than the deletion created one", m.state.records)
		}
		if res := mustApply(t, g, change(store.EventCreate, "5", at(110), map[string]any{"name": "Back"})); res.Outcome != apply.Created {
			t.Fatalf("create newer than the delete = %+v; want created", res)
		}
		if res := mustApply(t, g, change(store.EventDelete, "5", at(100), nil)); res.Outcome != apply.Ignored {
			t.Fatalf("late delete = %+v; want ignored", res)
		}
		if _, f := m.record("hubspot", "contacts", "5"); f == nil {
			t.Fatal("a late delete removed the newer record")
		}
	})
	t.Run("linked record", func(t *testing.T) {
		m, g := setup(t)
		c := mustApply(t, g, change(store.EventCreate, "1", at(10), map[string]any{"name": "One"}))
		if res := mustApply(t, g, change(store.EventDelete, "1", at(20), nil)); res.Outcome != apply.Deleted || res.RecordID != c.RecordID {
			t.Fatalf("delete = %+v", res)
		}
		if _, f := m.record("hubspot", "contacts", "1"); f != nil {
			t.Fatalf("record %v survived its deletion", f)
		}
		if res := mustApply(t, g, change(store.EventUpdate, "1", at(15), map[string]any{"name": "x"})); res.Outcome != apply.Stale {
			t.Fatalf("update older than the delete = %+v; want stale", res)
		}
		if res := mustApply(t, g, change(store.EventDelete, "1", at(20), nil)); res.Outcome != apply.Ignored {
			t.Fatalf("replayed delete = %+v; want ignored", res)
		}
		res := mustApply(t, g, change(store.EventRestore, "1", at(30), map[string]any{"name": "Again"}))
		if res.Outcome != apply.Created || res.RecordID != c.RecordID {
			t.Fatalf("restore = %+v; want the record recreated under %s", res, c.RecordID)
		}
	})
	t.Run("privacy delete", func(t *testing.T) {
		m, g := setup(t)
		c := mustApply(t, g, change(store.EventCreate, "9", at(10), map[string]any{"name": "Nine", "email": "n@example.com"}))
		if res := mustApply(t, g, change(store.EventPrivacyDelete, "9", at(20), nil)); res.Outcome != apply.Deleted {
			t.Fatalf("privacy delete = %+v", res)
		}
		clocks := m.state.clocks[recKey{"contacts", c.RecordID}]
		if len(clocks) != 1 || !clocks[apply.DeletedClock].Equal(at(20)) {
			t.Fatalf("clocks after a privacy delete = %v; want only %s", clocks, apply.DeletedClock)
		}
	})
}

func TestMergeRedirects(t *testing.T) {
	t.Parallel()
	t.Run("survivor has a record", func(t *testing.T) {
		m, g := setup(t)
		one := mustApply(t, g, change(store.EventCreate, "1", at(10), map[string]any{"name": "One"}))
		two := mustApply(t, g, change(store.EventCreate, "2", at(10), map[string]any{"name": "Two"}))
		mr := change(store.EventMerge, "2", at(50), map[string]any{"name": "Merged"})
		mr.MergedIDs = []string{"1"}
		if res := mustApply(t, g, mr); res.Outcome != apply.Merged || res.RecordID != two.RecordID {
			t.Fatalf("merge = %+v; want merged into %s", res, two.RecordID)
		}
		if _, ok := m.state.records[recKey{"contacts", one.RecordID}]; ok {
			t.Fatal("the merged-away record survived the merge")
		}
		for _, s := range []int{40, 50} {
			if res := mustApply(t, g, change(store.EventUpdate, "1", at(s), map[string]any{"name": "Late"})); res.Outcome != apply.Stale {
				t.Fatalf("update of merged id at %d = %+v; want stale", s, res)
			}
		}
		res := mustApply(t, g, change(store.EventUpdate, "1", at(60), map[string]any{"name": "Via1"}))
		if res.Outcome != apply.Updated || res.RecordID != two.RecordID {
			t.Fatalf("newer update of merged id = %+v; want it redirected to %s", res, two.RecordID)
		}
		if res := mustApply(t, g, change(store.EventDelete, "1", at(70), nil)); res.Outcome != apply.Ignored {
			t.Fatalf("delete of merged id = %+v; want ignored", res)
		}
		if _, f := m.record("hubspot", "contacts", "2"); f["name"] != "Via1" {
			t.Fatalf("survivor = %v; want name Via1 and not deleted", f)
		}
		if _, linked := m.state.links[extKey{"hubspot", "contacts", "1"}]; linked {
			t.Fatal("the merged-away id is still linked")
		}
	})
	t.Run("survivor unseen", func(t *testing.T) {
		m, g := setup(t)
		one := mustApply(t, g, change(store.EventCreate, "1", at(10), map[string]any{"name": "One"}))
		mr := change(store.EventMerge, "2", at(50), map[string]any{"phone": "2"})
		mr.MergedIDs = []string{"1", "1", ""}
		if res := mustApply(t, g, mr); res.Outcome != apply.Merged || res.RecordID != one.RecordID {
			t.Fatalf("merge = %+v; want the merged record %s re-pointed to the survivor", res, one.RecordID)
		}
		if id, f := m.record("hubspot", "contacts", "2"); id != one.RecordID || f["name"] != "One" || f["phone"] != "2" {
			t.Fatalf("survivor's record %s = %v", id, f)
		}
	})
}

// A chain of merges 1→2→3→4: a change of 1 newer than all of them travels the
// chain, unless it is longer than MaxRedirects.
func TestRedirectHopLimit(t *testing.T) {
	t.Parallel()
	m, g := setup(t)
	for i, pair := range [][2]string{{"1", "2"}, {"2", "3"}, {"3", "4"}} {
		mr := change(store.EventMerge, pair[1], at(10*(i+1)), nil)
		mr.MergedIDs = []string{pair[0]}
		mustApply(t, g, mr)
	}
	limited := &apply.Guarded{Store: m, MaxRedirects: 2}
	before := m.state.clone()
	_, err := limited.Apply(context.Background(), change(store.EventUpdate, "1", at(100), map[string]any{"name": "Far"}))
	if !errors.Is(err, apply.ErrPermanent) {
		t.Fatalf("3 redirects with MaxRedirects 2: %v; want ErrPermanent", err)
	}
	if len(m.state.records) != len(before.records) || len(m.state.links) != len(before.links) {
		t.Fatal("a failed apply changed the store")
	}
	enough := &apply.Guarded{Store: m, MaxRedirects: 3}
	res, err := enough.Apply(context.Background(), change(store.EventUpdate, "1", at(100), map[string]any{"name": "Far"}))
	if err != nil || res.Outcome != apply.Created {
		t.Fatalf("3 redirects with MaxRedirects 3 = %+v, %v; want the survivor's record made (the merges of unseen ids made none)", res, err)
	}
	if id, f := m.record("hubspot", "contacts", "4"); id != res.RecordID || f["name"] != "Far" {
		t.Fatalf("record of 4 = %s %v; want %s with name Far", id, f, res.RecordID)
	}
	if id, _ := m.record("hubspot", "contacts", "1"); id != "" {
		t.Fatalf("merged-away id 1 got record %s", id)
	}
}

func TestInvalidChangesArePermanent(t *testing.T) {
	t.Parallel()
	m, g := setup(t)
	for _, ch := range []apply.Change{
		{ObjectType: "contacts", ExternalID: "1", Kind: store.EventUpdate, OccurredAt: t0},
		{Source: "hubspot", ObjectType: "contacts", Kind: store.EventUpdate, OccurredAt: t0},
		{Source: "hubspot", ObjectType: "contacts", ExternalID: "1", Kind: store.EventUpdate},
	} {
		if _, err := g.Apply(context.Background(), ch); !errors.Is(err, apply.ErrPermanent) {
			t.Errorf("apply %+v: %v; want ErrPermanent", ch, err)
		}
	}
	if len(m.sources) != 0 {
		t.Fatal("an invalid change opened a transaction")
	}
}

// A failure in the middle of a change leaves nothing behind: the record, its
// clocks, link and tombstone commit together.
func TestApplyIsAtomic(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"CreateRecord", "AdvanceClocks", "PutTombstone"} {
		m, g := setup(t)
		mustApply(t, g, change(store.EventCreate, "1", at(10), map[string]any{"name": "One"}))
		m.failOn = method
		before := m.state.clone()
		var err error
		switch method {
		case "PutTombstone":
			_, err = g.Apply(context.Background(), change(store.EventDelete, "1", at(20), nil))
		default:
			_, err = g.Apply(context.Background(), change(store.EventCreate, "2", at(20), map[string]any{"name": "Two"}))
		}
		if !errors.Is(err, errInjected) {
			t.Fatalf("%s failing: %v; want the injected error", method, err)
		}
		if len(m.state.records) != len(before.records) || len(m.state.links) != len(before.links) || len(m.state.tombstones) != len(before.tombstones) {
			t.Fatalf("%s failing: the store changed", method)
		}
	}
}

// TestLocalDeleteTombstone: after a local delete leaves a TombstoneLocalDeleted
// (and the link is dropped once the object is archived), no create or update of
// the id brings the record back, however late its OccurredAt, and the echo of
// the archive is ignored; a restore newer than the delete brings it back, and
// later updates apply again.
func TestLocalDeleteTombstone(t *testing.T) {
	t.Parallel()
	m, g := setup(t)
	mustApply(t, g, change(store.EventCreate, "1", at(10), map[string]any{"name": "Ann"}))
	id, _ := m.record("hubspot", "contacts", "1")
	// The application deletes the record at 100 and writes the tombstone; the
	// outbound archive drops the link.
	k := recKey{"contacts", id}
	delete(m.state.records, k)
	delete(m.state.links, extKey{"hubspot", "contacts", "1"})
	m.state.tombstones[extKey{"hubspot", "contacts", "1"}] = apply.Tombstone{Kind: apply.TombstoneLocalDeleted, OccurredAt: at(100)}

	for _, s := range []int{50, 150} { // before the delete, and after it but before the archive
		for _, kind := range []string{store.EventUpdate, store.EventCreate} {
			res := mustApply(t, g, change(kind, "1", at(s), map[string]any{"name": "Late"}))
			if res.Outcome != apply.Stale || res.RecordID != "" {
				t.Fatalf("%s at %d after a local delete = %+v; want stale", kind, s, res)
			}
		}
	}
	if res := mustApply(t, g, change(store.EventDelete, "1", at(200), nil)); res.Outcome != apply.Ignored {
		t.Fatalf("the archive's deletion = %+v; want ignored", res)
	}
	if res := mustApply(t, g, change(store.EventRestore, "1", at(90), map[string]any{"name": "Old"})); res.Outcome != apply.Stale {
		t.Fatalf("a restore older than the local delete = %+v; want stale", res)
	}
	if _, f := m.record("hubspot", "contacts", "1"); f != nil {
		t.Fatalf("record came back: %v", f)
	}
	back := mustApply(t, g, change(store.EventRestore, "1", at(300), map[string]any{"name": "Back"}))
	if back.Outcome != apply.Created {
		t.Fatalf("a restore after the local delete = %+v; want created", back)
	}
	if res := mustApply(t, g, change(store.EventUpdate, "1", at(400), map[string]any{"name": "Newer"})); res.Outcome != apply.Updated {
		t.Fatalf("an update after the restore = %+v; want updated", res)
	}
	if _, f := m.record("hubspot", "contacts", "1"); f["name"] != "Newer" {
		t.Fatalf("record = %v", f)
	}
}

// TestLocalDeleteBeforeTheLink: the application deletes a record while the
// create of its object is in flight, so the deletion finds no link to
// tombstone; the outbound worker links the record after. A source change
// that then finds the record linked but deleted, its last deletion a local
// one, must not bring it back: it is stale, and the object gets the local
// deletion's tombstone (a partial change too, which a deleted record
// otherwise answers with ErrUnlinked). Only a newer restore brings it back.
func TestLocalDeleteBeforeTheLink(t *testing.T) {
	t.Parallel()
	m, g := setup(t)
	k := recKey{"contacts", "local-1"}
	// The deletion at 100, as records.Service.Delete writes it: no row, both
	// clocks, no link and so no tombstone; then the worker's link.
	m.state.clocks[k] = map[string]time.Time{apply.DeletedClock: at(100), apply.LocalDeletedClock: at(100)}
	m.state.links[extKey{"hubspot", "contacts", "9"}] = k.id

	partial := change(store.EventUpdate, "9", at(150), map[string]any{"phone": "2"})
	partial.Partial = true
	for _, ch := range []apply.Change{
		partial,
		change(store.EventUpdate, "9", at(160), map[string]any{"name": "Edited", "phone": "2"}),
		change(store.EventCreate, "9", at(170), map[string]any{"name": "Edited"}),
	} {
		res := mustApply(t, g, ch)
		if res.Outcome != apply.Stale {
			t.Fatalf("%s (partial %v) after the deletion = %+v; want stale", ch.Kind, ch.Partial, res)
		}
		if f := m.state.records[k]; f != nil {
			t.Fatalf("%s brought the record back: %v", ch.Kind, f)
		}
		if tomb := m.state.tombstones[extKey{"hubspot", "contacts", "9"}]; tomb.Kind != apply.TombstoneLocalDeleted || !tomb.OccurredAt.Equal(at(100)) {
			t.Fatalf("tombstone after %s = %+v; want the local deletion's, at 100", ch.Kind, tomb)
		}
	}
	if res := mustApply(t, g, change(store.EventDelete, "9", at(200), nil)); res.Outcome != apply.Ignored {
		t.Fatalf("the archive's deletion = %+v; want ignored", res)
	}
	back := mustApply(t, g, change(store.EventRestore, "9", at(300), map[string]any{"name": "Back"}))
	if back.Outcome != apply.Created || back.RecordID != k.id {
		t.Fatalf("a restore after the deletion = %+v; want %s created", back, k.id)
	}
	if _, ok := m.state.clocks[k][apply.LocalDeletedClock]; ok {
		t.Fatalf("clocks after the restore = %v; want the local deletion's cleared", m.state.clocks[k])
	}
}

// TestMergeIntoAnObjectDeletedBeforeItsLink: HubSpot merges an object into
// one whose record was deleted here while its create was in flight, in the
// moment between the link and the outbound worker's tombstone. The merged
// record goes with the survivor (the deletion's archive removes both
// objects), as for a survivor tombstoned here, instead of being re-pointed
// to an object about to be archived.
func TestMergeIntoAnObjectDeletedBeforeItsLink(t *testing.T) {
	t.Parallel()
	m, g := setup(t)
	merged := mustApply(t, g, change(store.EventCreate, "1", at(10), map[string]any{"name": "One"}))
	k := recKey{"contacts", "local-2"}
	m.state.clocks[k] = map[string]time.Time{apply.DeletedClock: at(100), apply.LocalDeletedClock: at(100)}
	m.state.links[extKey{"hubspot", "contacts", "2"}] = k.id

	mr := change(store.EventMerge, "2", at(150), map[string]any{"name": "Merged"})
	mr.MergedIDs = []string{"1"}
	res := mustApply(t, g, mr)
	if _, ok := m.state.records[recKey{"contacts", merged.RecordID}]; ok {
		t.Fatalf("merge = %+v; the merged record survived a merge into an object deleted here", res)
	}
	if f := m.state.records[k]; f != nil {
		t.Fatalf("merge = %+v; it brought the deleted survivor back: %v", res, f)
	}
	if id := m.state.links[extKey{"hubspot", "contacts", "2"}]; id != k.id {
		t.Fatalf("the survivor is linked to %q; want the deleted record %s, whose deletion archives it", id, k.id)
	}
	if tomb := m.state.tombstones[extKey{"hubspot", "contacts", "2"}]; tomb.Kind != apply.TombstoneLocalDeleted || !tomb.OccurredAt.Equal(at(100)) {
		t.Fatalf("survivor's tombstone = %+v; want the local deletion's, at 100", tomb)
	}
	if res := mustApply(t, g, change(store.EventUpdate, "1", at(200), map[string]any{"name": "Late"})); res.Outcome != apply.Stale {
		t.Fatalf("a later change of the merged id = %+v; want stale (its survivor is deleted here)", res)
	}
}

// TestMergeKeepsANewerTombstoneOfASurvivorDeletedHere: as
// TestMergeIntoAnObjectDeletedBeforeItsLink, but HubSpot's deletion of the
// new object came (before its link) after the local one, so its tombstone is
// newer than the local deletion's and stays. The merge must not remove it.
func TestMergeKeepsANewerTombstoneOfASurvivorDeletedHere(t *testing.T) {
	t.Parallel()
	m, g := setup(t)
	mustApply(t, g, change(store.EventCreate, "1", at(10), map[string]any{"name": "One"}))
	k := recKey{"contacts", "local-2"}
	m.state.clocks[k] = map[string]time.Time{apply.DeletedClock: at(100), apply.LocalDeletedClock: at(100)}
	mustApply(t, g, change(store.EventDelete, "2", at(120), nil)) // no link yet: only a tombstone
	m.state.links[extKey{"hubspot", "contacts", "2"}] = k.id

	mr := change(store.EventMerge, "2", at(150), nil)
	mr.MergedIDs = []string{"1"}
	res := mustApply(t, g, mr)
	if _, ok := m.state.tombstones[extKey{"hubspot", "contacts", "2"}]; !ok {
		t.Fatalf("merge = %+v; it removed the survivor's tombstone", res)
	}
}

// TestMergeIntoAnUnlinkedSurvivor: HubSpot merges a synced object into one
// this application created whose link is not recorded (the create's answer
// was lost). The survivor's read carries its id property, which finds its
// record: the merged record joins it, instead of being re-pointed to the
// survivor's object (which left the survivor's own record unlinked, its
// create's retry then meeting a link conflict).
func TestMergeIntoAnUnlinkedSurvivor(t *testing.T) {
	t.Parallel()
	m, g := setup(t)
	own := mustApply(t, g, change(store.EventCreate, "x", at(1), map[string]any{"email": "own@example.com", "name": "Own"}))
	delete(m.state.links, extKey{"hubspot", "contacts", "x"}) // created here; its create's answer lost
	merged := mustApply(t, g, change(store.EventCreate, "5", at(2), map[string]any{"email": "merged@example.com", "name": "Merged"}))

	mr := change(store.EventMerge, "9", at(10), map[string]any{"email": "own@example.com", "name": "Survivor", "phone": nil})
	mr.MergedIDs = []string{"5"}
	mr.MatchField, mr.MatchValue = "email", "own@example.com"
	res := mustApply(t, g, mr)
	if res.Outcome != apply.Merged || res.RecordID != own.RecordID {
		t.Fatalf("merge = %+v; want merged into the survivor's own record %s", res, own.RecordID)
	}
	if id := m.state.links[extKey{"hubspot", "contacts", "9"}]; id != own.RecordID {
		t.Fatalf("survivor linked to %q; want its own record %s", id, own.RecordID)
	}
	if f, ok := m.state.records[recKey{"contacts", merged.RecordID}]; ok {
		t.Fatalf("the merged record survived the merge: %v", f)
	}
	if len(m.state.records) != 1 {
		t.Fatalf("records after the merge: %v; want only the survivor's", m.state.records)
	}
	if _, f := m.record("hubspot", "contacts", "9"); f["name"] != "Survivor" {
		t.Fatalf("survivor's record = %v; want the merge's values", f)
	}
}

// TestMergeAwayOfAnUnlinkedObject: HubSpot merges away an object created from
// a record here whose create's answer was lost (no link). The merge names an
// id with no link; the survivor keeps the object's email
// (MergedMatchValues), which finds the record. It joins the survivor as a
// linked merged record would: deleted into the survivor's record, or
// re-pointed to the survivor when that has none. A record found by such an
// email whose write cannot have reached HubSpot is left alone.
func TestMergeAwayOfAnUnlinkedObject(t *testing.T) {
	t.Parallel()
	unlinked := func(t *testing.T, m *memStore, g *apply.Guarded, ext, email string, written bool) string {
		t.Helper()
		r := mustApply(t, g, change(store.EventCreate, ext, at(1), map[string]any{"email": email, "name": email}))
		delete(m.state.links, extKey{"hubspot", "contacts", ext})
		if written {
			if m.state.written == nil {
				m.state.written = map[recKey]bool{}
			}
			m.state.written[recKey{"contacts", r.RecordID}] = true
		}
		return r.RecordID
	}
	merge := func(survivor, survivorEmail string, merged string, also ...string) apply.Change {
		mr := change(store.EventMerge, survivor, at(10), map[string]any{"email": survivorEmail, "name": "Survivor"})
		mr.MergedIDs = []string{merged}
		mr.MatchField, mr.MatchValue = "email", survivorEmail
		mr.MergedMatchValues = also
		return mr
	}
	t.Run("survivor has a record", func(t *testing.T) {
		m, g := setup(t)
		lost := unlinked(t, m, g, "x", "lost@example.com", true)
		kept := mustApply(t, g, change(store.EventCreate, "9", at(2), map[string]any{"email": "kept@example.com"}))
		res := mustApply(t, g, merge("9", "kept@example.com", "8", "lost@example.com"))
		if res.Outcome != apply.Merged || res.RecordID != kept.RecordID {
			t.Fatalf("merge = %+v; want merged into %s", res, kept.RecordID)
		}
		if f, ok := m.state.records[recKey{"contacts", lost}]; ok {
			t.Fatalf("the merged-away object's record survived the merge: %v", f)
		}
	})
	t.Run("survivor has none", func(t *testing.T) {
		m, g := setup(t)
		lost := unlinked(t, m, g, "x", "lost@example.com", true)
		res := mustApply(t, g, merge("9", "new@example.com", "8", "lost@example.com"))
		if res.Outcome != apply.Merged || res.RecordID != lost {
			t.Fatalf("merge = %+v; want the merged-away object's record %s re-pointed to the survivor", res, lost)
		}
		if id := m.state.links[extKey{"hubspot", "contacts", "9"}]; id != lost {
			t.Fatalf("survivor linked to %q; want %s", id, lost)
		}
		if len(m.state.records) != 1 {
			t.Fatalf("records after the merge: %v; want one", m.state.records)
		}
	})
	t.Run("more records than merged ids", func(t *testing.T) {
		// The survivor keeps two emails of unlinked records whose writes
		// may have reached HubSpot, and the merge names one id with no link:
		// which record was that object is unclear, so neither is taken.
		m, g := setup(t)
		one := unlinked(t, m, g, "x", "one@example.com", true)
		two := unlinked(t, m, g, "y", "two@example.com", true)
		mustApply(t, g, change(store.EventCreate, "9", at(2), map[string]any{"email": "kept@example.com"}))
		mustApply(t, g, merge("9", "kept@example.com", "8", "one@example.com", "two@example.com"))
		for _, id := range []string{one, two} {
			if _, ok := m.state.records[recKey{"contacts", id}]; !ok {
				t.Fatalf("record %s was taken as the merged object, with two candidates for one id", id)
			}
		}
	})
	t.Run("never written", func(t *testing.T) {
		m, g := setup(t)
		fresh := unlinked(t, m, g, "x", "fresh@example.com", false)
		kept := mustApply(t, g, change(store.EventCreate, "9", at(2), map[string]any{"email": "kept@example.com"}))
		mustApply(t, g, merge("9", "kept@example.com", "8", "fresh@example.com"))
		if _, ok := m.state.records[recKey{"contacts", fresh}]; !ok {
			t.Fatal("a record whose write cannot have reached HubSpot was merged away")
		}
		if _, ok := m.state.records[recKey{"contacts", kept.RecordID}]; !ok {
			t.Fatal("the survivor's record is gone")
		}
	})
}

// TestSourceDeleteAfterLocalDelete: a record deleted here, later brought back
// and deleted at the source (its DeletedClock newer than its
// LocalDeletedClock) comes back with a newer source change, as any record
// deleted at the source.
func TestSourceDeleteAfterLocalDelete(t *testing.T) {
	t.Parallel()
	m, g := setup(t)
	c := mustApply(t, g, change(store.EventCreate, "1", at(10), map[string]any{"name": "One"}))
	mustApply(t, g, change(store.EventDelete, "1", at(40), nil))
	k := recKey{"contacts", c.RecordID}
	m.state.clocks[k][apply.LocalDeletedClock] = at(20) // a local deletion before, never cleared
	if res := mustApply(t, g, change(store.EventUpdate, "1", at(50), map[string]any{"name": "Again"})); res.Outcome != apply.Created {
		t.Fatalf("a change newer than the source deletion = %+v; want created", res)
	}
}

// sqlMemStore is memStore whose transactions are SQLRecordTxs (with no SQL
// behind them), so Guarded can run a fence.
type sqlMemStore struct{ *memStore }

type sqlMemTx struct{ apply.RecordTx }

func (sqlMemTx) DBTX() store.DBTX { return nil }

func (s sqlMemStore) InTx(ctx context.Context, fn func(apply.RecordTx) error) error {
	return s.memStore.InTx(ctx, func(tx apply.RecordTx) error { return fn(sqlMemTx{tx}) })
}

// TestApplyFenced: the fence runs first in the apply's transaction; its error
// rolls the change back and is returned; a RecordTx that is no SQLRecordTx
// cannot run a fence and writes nothing.
func TestApplyFenced(t *testing.T) {
	t.Parallel()
	m := newMemStore()
	g := &apply.Guarded{Store: sqlMemStore{m}}
	ch := change(store.EventCreate, "1", at(10), map[string]any{"name": "Ann"})
	lost := func(context.Context, store.DBTX) error { return store.ErrLeaseLost }
	if _, err := g.ApplyFenced(context.Background(), ch, lost); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("apply with a failing fence: %v, want ErrLeaseLost", err)
	}
	if id, f := m.record("hubspot", "contacts", "1"); id != "" || f != nil {
		t.Fatalf("a failed fence left record %q %v", id, f)
	}
	ran := 0
	res, err := g.ApplyFenced(context.Background(), ch, func(context.Context, store.DBTX) error { ran++; return nil })
	if err != nil || ran != 1 || res.Outcome != apply.Created {
		t.Fatalf("apply with a passing fence = %+v, %v (fence ran %d times)", res, err, ran)
	}

	plain := &apply.Guarded{Store: newMemStore()}
	if _, err := plain.ApplyFenced(context.Background(), ch, lost); !errors.Is(err, apply.ErrFenceUnsupported) {
		t.Fatalf("fenced apply over a plain RecordTx: %v, want ErrFenceUnsupported", err)
	}
}

func TestGuardPartialChangeCreatesNoRecord(t *testing.T) {
	t.Parallel()
	m, g := setup(t)
	local := mustApply(t, g, change(store.EventCreate, "x", at(1), map[string]any{"email": "a@example.com", "name": "Ann"}))
	delete(m.state.links, extKey{"hubspot", "contacts", "x"}) // created here; its link not recorded yet
	ch := change(store.EventUpdate, "55", at(2), map[string]any{"name": "Bea"})
	ch.Partial = true
	if res, err := g.Apply(context.Background(), ch); !errors.Is(err, apply.ErrUnlinked) {
		t.Fatalf("partial update of an unlinked id = %+v, %v; want ErrUnlinked", res, err)
	}
	if len(m.state.records) != 1 {
		t.Fatalf("records %v; a partial change made a record of its own", m.state.records)
	}
	// The whole object, matched by its id property, reaches the record.
	ch.Partial, ch.Fields = false, map[string]any{"email": "a@example.com", "name": "Bea"}
	ch.MatchField, ch.MatchValue = "email", "a@example.com"
	if res := mustApply(t, g, ch); res.Outcome != apply.Updated || res.RecordID != local.RecordID {
		t.Fatalf("whole object = %+v; want record %s updated", res, local.RecordID)
	}
	// Linked now: a partial change applies.
	ch = change(store.EventUpdate, "55", at(3), map[string]any{"name": "Cid"})
	ch.Partial = true
	if res := mustApply(t, g, ch); res.Outcome != apply.Updated || res.RecordID != local.RecordID {
		t.Fatalf("partial update of the linked id = %+v", res)
	}
}

// A record deleted here by a HubSpot deletion comes back whole when the object
// is restored, even if an edit after the restore arrives before the restore:
// the edit carries only the changed properties, so it is ErrUnlinked, and the
// caller applies the whole object read from HubSpot.
func TestGuardPartialChangeOfDeletedRecord(t *testing.T) {
	t.Parallel()
	m, g := setup(t)
	c := mustApply(t, g, change(store.EventCreate, "1", at(10), map[string]any{"name": "One", "phone": "1"}))
	mustApply(t, g, change(store.EventDelete, "1", at(20), nil))
	ch := change(store.EventUpdate, "1", at(40), map[string]any{"phone": "2"})
	ch.Partial = true
	if res, err := g.Apply(context.Background(), ch); !errors.Is(err, apply.ErrUnlinked) {
		t.Fatalf("partial edit of a deleted record = %+v, %v; want ErrUnlinked", res, err)
	}
	if _, f := m.record("hubspot", "contacts", "1"); f != nil {
		t.Fatalf("a partial edit brought the record back as %v", f)
	}
	ch.Partial, ch.Fields = false, map[string]any{"name": "One", "phone": "2"}
	if res := mustApply(t, g, ch); res.Outcome != apply.Created || res.RecordID != c.RecordID {
		t.Fatalf("whole object = %+v; want record %s back", res, c.RecordID)
	}
	if _, f := m.record("hubspot", "contacts", "1"); f["name"] != "One" || f["phone"] != "2" {
		t.Fatalf("record = %v; want it whole", f)
	}
}

// A merge of objects that have no record here, carrying no values (HubSpot
// moved no property, so the worker read none), makes no empty record: the
// survivor's next edit, a Partial change, is ErrUnlinked, and the caller's
// whole read makes the record.
func TestGuardMergeOfUnseenObjectsMakesNoRecord(t *testing.T) {
	t.Parallel()
	m, g := setup(t)
	mr := change(store.EventMerge, "2", at(10), nil)
	mr.MergedIDs = []string{"1"}
	if res := mustApply(t, g, mr); res.Outcome != apply.Ignored || len(m.state.records) != 0 {
		t.Fatalf("merge of unseen objects = %+v, records %v; want ignored, none", res, m.state.records)
	}
	ch := change(store.EventUpdate, "2", at(20), map[string]any{"phone": "2"})
	ch.Partial = true
	if _, err := g.Apply(context.Background(), ch); !errors.Is(err, apply.ErrUnlinked) {
		t.Fatalf("partial edit of the survivor = %v; want ErrUnlinked", err)
	}
	ch.Partial, ch.Fields = false, map[string]any{"name": "Two", "phone": "2"}
	if res := mustApply(t, g, ch); res.Outcome != apply.Created {
		t.Fatalf("whole survivor = %+v; want its record created", res)
	}
	if _, f := m.record("hubspot", "contacts", "2"); f["name"] != "Two" {
		t.Fatalf("survivor's record = %v", f)
	}
}
