package outbound_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// ownerLinkedLast stores the pushed state (the link) of record owner, written
// on its own, only once the one of record other has been, or after a bound:
// the interleaving in which the record whose object HubSpot merged away
// takes the survivor's link first, unless the worker orders the two.
type ownerLinkedLast struct {
	*links.Links
	owner, other string
	once         sync.Once
	otherDone    chan struct{}
}

func (l *ownerLinkedLast) PushedMany(ctx context.Context, destination, objectType string, states []links.Pushed) error {
	if len(states) == 1 && states[0].RecordID == l.owner {
		select {
		case <-l.otherDone:
		case <-time.After(500 * time.Millisecond): // the worker holds the other back
		}
	}
	err := l.Links.PushedMany(ctx, destination, objectType, states)
	if len(states) == 1 && states[0].RecordID == l.other {
		l.once.Do(func() { close(l.otherDone) })
	}
	return err
}

// TestMergedLostCreatesRetriedTogether: two local contacts are created in one
// batch whose answer is lost; a HubSpot user merges one's object into the
// other's before the retry, which upserts both by email in one batch.
//
// When the survivor's record comes first in the batch, HubSpot resolves both
// upserts to the survivor (the merged-away email finds it), and the later one
// leaves its email there. The survivor's link must go to the record that
// made it, and the other must fail as a link conflict, then be taken by the
// merge's webhook (the survivor keeps its email), whichever record's link the
// worker would store first and in whatever order HubSpot lists the results:
// the worker reads the history of the survivor's email (one call) for the
// value it held before the retry's writes. Before, the links were stored in parallel: when
// the merged-away record won, the other was dead-lettered and no webhook
// found it (the model's seed 3158): a local contact with no HubSpot object.
//
// The other way round, the merged-away record's upsert moves the survivor's
// email to itself, and the survivor's record's upsert finds no contact by
// its email and makes one: the merge is undone, but each record has an object
// with its own values.
func TestMergedLostCreatesRetriedTogether(t *testing.T) {
	for _, tc := range []struct {
		name      string
		intoFirst bool // the second record's object is merged into the first's
		reversed  bool // the retry's answer lists its results last first
	}{
		{"second merged into first", true, false},
		{"second merged into first, answer reversed", true, true},
		{"first merged into second", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, d store.Dialect) {
				ctx := context.Background()
				b := setup(t, options{dialect: d})
				in := b.inboundSide(t)
				ada, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "ada@example.com", "first_name": "Ada"})
				if err != nil {
					t.Fatal(err)
				}
				grace, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "grace@example.com", "first_name": "Grace"})
				if err != nil {
					t.Fatal(err)
				}
				owner, merged := ada, grace
				if !tc.intoFirst {
					owner, merged = grace, ada
				}
				hs := &lostThenHooked{HubSpot: b.client, reversed: tc.reversed}
				hs.before = func() {
					ids := map[string]string{}
					for _, o := range b.sim.Objects("contacts") {
						if !o.Archived {
							ids[o.Properties["email"]] = o.ID
						}
					}
					survivor, away := ids[owner.Fields["email"].(string)], ids[merged.Fields["email"].(string)]
					if survivor == "" || away == "" {
						t.Errorf("HubSpot's contacts %v; want both created by the lost call (test setup)", ids)
						return
					}
					b.clock.Advance(time.Second)
					if err := b.sim.UserMerge("contacts", survivor, away); err != nil {
						t.Error(err)
					}
				}
				lk := &ownerLinkedLast{Links: b.links, owner: owner.ID, other: merged.ID, otherDone: make(chan struct{})}
				w := b.worker(t, func(c *outbound.Config) { c.HubSpot, c.Links = hs, lk })
				b.drain(t, w)
				if hs.calls < 2 {
					t.Fatalf("%d upsert calls; want the lost one and its retry", hs.calls)
				}
				reads := w.Metrics().Snapshot().Calls[outbound.CallLabel{Op: "read_owner", Outcome: "ok"}]
				if want := map[bool]int64{true: 1, false: 0}[tc.intoFirst]; reads != want {
					t.Errorf("%d reads of the survivor's history; want %d", reads, want)
				}
				if _, ok, err := b.links.Lookup(ctx, "hubspot", "contacts", owner.ID); err != nil || !ok {
					t.Fatalf("the survivor's maker %s is not linked after the retry (%v)", owner.Fields["email"], err)
				}
				if tc.intoFirst {
					dl, err := b.st.Outbound().DeadLetters(ctx, store.DeadLetterFilter{Key: "hubspot", Limit: 10})
					if err != nil {
						t.Fatal(err)
					}
					if len(dl) != 1 || dl[0].RecordID != merged.ID {
						t.Errorf("dead letters %+v; want the merged-away record's create", dl)
					}
				}
				// The merge's webhook is applied (taking the merged-away
				// record when both upserts met the survivor), and a re-queued
				// dead letter is resolved.
				drainInbound(t, b, in)
				if !deliverInbound(ctx, t, b, in) {
					t.FailNow()
				}
				b.drain(t, b.worker(t, nil))
				if dl, err := b.st.Outbound().DeadLetters(ctx, store.DeadLetterFilter{Key: "hubspot", Limit: 10}); err != nil || len(dl) != 0 {
					t.Errorf("dead letters after the merge: %+v, %v; want none", dl, err)
				}
				want := []records.Record{owner}
				if tc.intoFirst {
					if _, err := b.recs.Get(ctx, "contacts", merged.ID); !errors.Is(err, records.ErrNotFound) {
						t.Errorf("the merged-away record after the merge was applied: %v; want it merged away", err)
					}
				} else {
					want = append(want, merged)
				}
				// Each record left has a live object with its own values,
				// and HubSpot has no other.
				if live := liveContacts(b); len(live) != len(want) {
					t.Errorf("HubSpot's live contacts %v; want one per local record left (%d)", live, len(want))
				}
				for _, r := range want {
					id, ok, err := b.links.Lookup(ctx, "hubspot", "contacts", r.ID)
					if err != nil || !ok {
						t.Errorf("%s: not linked (%v)", r.Fields["email"], err)
						continue
					}
					o, found := b.sim.Object("contacts", id)
					if !found || o.Archived || !strings.EqualFold(o.Properties["email"], r.Fields["email"].(string)) || o.Properties["firstname"] != r.Fields["first_name"] {
						t.Errorf("%s's object %s = %v (archived %v); want its own values", r.Fields["email"], id, o.Properties, o.Archived)
					}
					if got, err := b.recs.Get(ctx, "contacts", r.ID); err != nil || got.Fields["email"] != r.Fields["email"] {
						t.Errorf("%s's record = %+v, %v; want it kept as it was", r.Fields["email"], got, err)
					}
				}
				if c := b.counts(t); c[store.StatusPending]+c[store.StatusProcessing] != 0 {
					t.Errorf("outbound queue %v; want nothing left to do", c)
				}
			})
		})
	}
}

// TestLostCreateDeletedThenMergedInto: local contact Ada's create reaches
// HubSpot (contact X) but its answer is lost, so no link of X is stored. The
// application deletes Ada; a HubSpot user merges Grace's contact into X
// before the deletion's retry, which finds X by Ada's email and archives it.
// The merge's webhook, applied after the archive, must take Grace's record
// with it, as it does when the deleted record's link was stored: before,
// nothing marked X as deleted here, the merge re-pointed Grace to X and
// Grace stayed live, linked to an archived contact (the model's seed 46436).
// X is marked only once it is archived: when the archive fails, X stays
// live and unmarked until the retry archives it (a mark on a live object,
// which another record's upsert by the same email might take, would make
// every change of it stale).
func TestLostCreateDeletedThenMergedInto(t *testing.T) {
	for _, archiveFails := range []bool{false, true} {
		t.Run(map[bool]string{false: "archived", true: "archive fails once"}[archiveFails], func(t *testing.T) {
			lostCreateDeletedThenMergedInto(t, archiveFails)
		})
	}
}

// archiveFailsOnce answers its first BatchArchive with a 503.
type archiveFailsOnce struct {
	outbound.HubSpot
	failed bool
}

func (h *archiveFailsOnce) BatchArchive(ctx context.Context, t hubspot.ObjectType, ids []string) error {
	if !h.failed {
		h.failed = true
		return &hubspot.Error{Method: "POST", Path: "/crm/v3/objects/contacts/batch/archive", StatusCode: 503, Message: "injected"}
	}
	return h.HubSpot.BatchArchive(ctx, t, ids)
}

func lostCreateDeletedThenMergedInto(t *testing.T, archiveFails bool) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		b := setup(t, options{dialect: d})
		in := b.inboundSide(t)
		grace, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "grace@example.com", "first_name": "Grace"})
		if err != nil {
			t.Fatal(err)
		}
		b.drain(t, b.worker(t, nil))
		if !deliverInbound(ctx, t, b, in) {
			t.FailNow()
		}
		graceObj, ok, err := b.links.Lookup(ctx, "hubspot", "contacts", grace.ID)
		if err != nil || !ok {
			t.Fatalf("Grace is not linked after her create (%v)", err)
		}

		ada, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "ada@example.com", "first_name": "Ada"})
		if err != nil {
			t.Fatal(err)
		}
		hs := &lostThenHooked{HubSpot: b.client}
		if _, err := b.worker(t, func(c *outbound.Config) { c.HubSpot = hs }).RunOnce(ctx); err != nil {
			t.Logf("cycle: %v", err)
		}
		var adaObj string
		for _, o := range b.sim.Objects("contacts") {
			if o.Properties["email"] == "ada@example.com" {
				adaObj = o.ID
			}
		}
		if hs.calls != 1 || adaObj == "" {
			t.Fatalf("%d upserts, Ada's contact %q; want one lost create that made it (test setup)", hs.calls, adaObj)
		}
		if err := b.recs.Delete(ctx, "contacts", ada.ID, ada.Version); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(time.Second)
		if err := b.sim.UserMerge("contacts", adaObj, graceObj); err != nil {
			t.Fatal(err)
		}
		if archiveFails {
			hs := &archiveFailsOnce{HubSpot: b.client}
			b.clock.Advance(time.Minute) // past the lost create's backoff
			if _, err := b.worker(t, func(c *outbound.Config) { c.HubSpot = hs }).RunOnce(ctx); err != nil {
				t.Logf("cycle: %v", err)
			}
			if !hs.failed {
				t.Fatal("the deletion's cycle did not try to archive Ada's contact (test setup)")
			}
			if o, _ := b.sim.Object("contacts", adaObj); o.Archived {
				t.Fatalf("Ada's contact %s was archived though the archive failed (test setup)", adaObj)
			}
			if ts, ok, err := b.links.Tombstone(ctx, "hubspot", "contacts", adaObj); err != nil || ok {
				t.Fatalf("Ada's live contact %s after its archive failed: tombstone %+v, %v, %v; want none", adaObj, ts, ok, err)
			}
		}
		b.drain(t, b.worker(t, nil))
		if o, found := b.sim.Object("contacts", adaObj); !found || !o.Archived {
			t.Fatalf("Ada's contact %s after her deletion: found %v, %+v; want it archived by the deletion", adaObj, found, o)
		}
		if ts, ok, err := b.links.Tombstone(ctx, "hubspot", "contacts", adaObj); err != nil || !ok || ts.Kind != links.TombstoneLocalDeleted {
			t.Errorf("Ada's archived contact %s: tombstone %+v, %v, %v; want it marked deleted here", adaObj, ts, ok, err)
		}
		if !deliverInbound(ctx, t, b, in) {
			t.FailNow()
		}
		rec, err := b.recs.Get(ctx, "contacts", grace.ID)
		if !errors.Is(err, records.ErrNotFound) {
			id, _, _ := b.links.Lookup(ctx, "hubspot", "contacts", grace.ID)
			o, _ := b.sim.Object("contacts", id)
			t.Errorf("Grace after the merge into Ada's deleted contact: %+v, %v, linked to %s (archived %v); want her taken with it", rec, err, id, o.Archived)
		}
		if live := liveContacts(b); len(live) != 0 {
			t.Errorf("HubSpot's live contacts %v; want none", live)
		}
		if c := b.counts(t); c[store.StatusPending]+c[store.StatusProcessing]+c[store.StatusFailed] != 0 {
			t.Errorf("outbound queue %v; want nothing left to do", c)
		}
	})
}
