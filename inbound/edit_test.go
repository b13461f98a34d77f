package inbound

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// countOutcomes returns a Hooks.OnOutcome that counts outcomes into m.
func countOutcomes(mu *sync.Mutex, m map[string]int) func(o, _ string) {
	return func(o, _ string) { mu.Lock(); m[o]++; mu.Unlock() }
}

// TestWorkerAppliesAnEditAsOneChange: the events of one HubSpot edit (a
// property each, one occurredAt) of a record apply as one change, with each
// event's own outcome; a property set twice in the edit, another occurredAt
// and another record each start another change. It holds for concurrent
// applies and for one at a time; there, another record's event of the same
// instant between two of the edit's ends it (the order is every event's).
func TestWorkerAppliesAnEditAsOneChange(t *testing.T) {
	for _, conc := range []int{1, 4} {
		t.Run(fmt.Sprintf("concurrency=%d", conc), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var mu sync.Mutex
			got := map[string]int{}
			w := b.newWorker(t, &fakeReader{}, "w1", func(c *WorkerConfig) {
				c.ApplyConcurrency = conc
				c.Hooks.OnOutcome = countOutcomes(&mu, got)
			})
			b.deliverEvents(t,
				whEvent("contact.propertyChange", 1, t0, prop("firstname", "Ada")),
				whEvent("contact.propertyChange", 1, t0, prop("lastname", "Lovelace")),
				whEvent("contact.propertyChange", 1, t0, prop("phone", "555")),
				whEvent("contact.propertyChange", 1, t0, prop("phone", "556")),
				whEvent("contact.propertyChange", 2, t0, prop("firstname", "Bob")),
				whEvent("contact.propertyChange", 2, t0, prop("lastname", "Byron")),
				whEvent("contact.propertyChange", 3, t0+1, prop("firstname", "Cy")),
				whEvent("contact.propertyChange", 1, t0+1, prop("company", "Analytical")),
				whEvent("contact.propertyChange", 3, t0+1, prop("lastname", "Young")),
			)
			if n := drain(t, w); n != 9 {
				t.Fatalf("claimed %d events, want 9", n)
			}
			if got := b.statusCounts(t); got["processed"] != 9 {
				t.Fatalf("statuses %v, want 9 processed", got)
			}
			var changes []string
			for _, ch := range b.applier.calls {
				changes = append(changes, ch.ExternalID+":"+fmt.Sprint(slices.Sorted(maps.Keys(ch.Fields))))
			}
			slices.Sort(changes)
			want := []string{"1:[company]", "1:[first_name last_name phone]", "1:[phone]", "2:[first_name last_name]", "3:[first_name last_name]"}
			if conc == 1 {
				// Contact 1's company lies between contact 3's two events.
				want = []string{"1:[company]", "1:[first_name last_name phone]", "1:[phone]", "2:[first_name last_name]", "3:[first_name]", "3:[last_name]"}
			}
			if !slices.Equal(changes, want) {
				t.Errorf("changes applied %v, want %v", changes, want)
			}
			for id, want := range map[string][2]string{"1": {"Ada", "Lovelace"}, "2": {"Bob", "Byron"}, "3": {"Cy", "Young"}} {
				if rec, _ := b.applier.record("contacts", id); rec.Fields["first_name"] != want[0] || rec.Fields["last_name"] != want[1] {
					t.Errorf("contact %s = %v, want %v", id, rec.Fields, want)
				}
			}
			// The second phone of the same instant is not newer: stale, as it
			// was when every event applied alone.
			if got[OutcomeApplied] != 8 || got[OutcomeStale] != 1 {
				t.Errorf("outcomes %v, want 8 applied and 1 stale", got)
			}
		})
	}
}

// TestWorkerEditFallsBackToEachEvent: when the change of an edit fails, its
// events apply one at a time, so that only the event whose value the
// Applier refuses is dead-lettered and the rest of the edit applies.
func TestWorkerEditFallsBackToEachEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.applier.fail = func(ch apply.Change) error {
		if _, ok := ch.Fields["phone"]; ok {
			return fmt.Errorf("%w: phone refused", apply.ErrPermanent)
		}
		return nil
	}
	var mu sync.Mutex
	got := map[string]int{}
	w := b.newWorker(t, &fakeReader{}, "w1", func(c *WorkerConfig) { c.Hooks.OnOutcome = countOutcomes(&mu, got) })
	b.deliverEvents(t,
		whEvent("contact.propertyChange", 1, t0, prop("firstname", "Ada")),
		whEvent("contact.propertyChange", 1, t0, prop("phone", "bad")),
		whEvent("contact.propertyChange", 1, t0, prop("lastname", "Lovelace")),
	)
	drain(t, w)
	if got := b.statusCounts(t); got["processed"] != 2 || got["failed"] != 1 {
		t.Fatalf("statuses %v, want 2 processed and the phone failed", got)
	}
	ada, _ := b.applier.record("contacts", "1")
	if ada.Fields["first_name"] != "Ada" || ada.Fields["last_name"] != "Lovelace" {
		t.Errorf("contact 1 = %v, want the edit's other properties applied", ada.Fields)
	}
	if got[OutcomeApplied] != 2 || got[OutcomeDead] != 1 {
		t.Errorf("outcomes %v, want 2 applied and 1 dead", got)
	}
	var changes []string
	for _, ch := range b.applier.calls {
		changes = append(changes, fmt.Sprint(slices.Sorted(maps.Keys(ch.Fields))))
	}
	if want := []string{"[first_name last_name phone]", "[first_name]", "[phone]", "[last_name]"}; !slices.Equal(changes, want) {
		t.Errorf("changes tried %v, want the edit, then its events one at a time %v", changes, want)
	}
}

// TestWorkerEditOfUnlinkedRecord: an edit of an external id no record is
// linked to yet fails as one change (apply.ErrUnlinked); its first event
// then reads the whole object, which holds the edit, and creates the record,
// and the rest find it, as when each event applied alone.
func TestWorkerEditOfUnlinkedRecord(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.applier.guardPartial = true
	obj := contactObj("9", "nine@example.com", "Nina", time.UnixMilli(t0))
	obj.Properties["lastname"] = "Nine"
	reader := &fakeReader{objects: map[string]hubspot.Object{"9": obj}}
	w := b.newWorker(t, reader, "w1")
	b.deliverEvents(t,
		whEvent("contact.propertyChange", 9, t0, prop("firstname", "Nina")),
		whEvent("contact.propertyChange", 9, t0, prop("lastname", "Nine")),
	)
	drain(t, w)
	if got := b.statusCounts(t); got["processed"] != 2 {
		t.Fatalf("statuses %v, want 2 processed", got)
	}
	rec, ok := b.applier.record("contacts", "9")
	if !ok || rec.Fields["email"] != "nine@example.com" || rec.Fields["first_name"] != "Nina" || rec.Fields["last_name"] != "Nine" {
		t.Fatalf("contact 9 = %+v, want the object read whole and the edit's last name", rec)
	}
	if first := b.applier.calls[0]; len(first.Fields) != 2 || !first.Partial {
		t.Errorf("first change %+v, want the edit's two properties as one partial change", first)
	}
	if reader.calls != 1 {
		t.Errorf("%d reads of the object, want 1", reader.calls)
	}
}

// TestWorkerEditThroughRecords: an edit applied through the records service
// completes all its events in the apply's transaction (fenced), writes the
// record once (one version), and leaves each field's clock at the edit.
func TestWorkerEditThroughRecords(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setupDialect(t, d, store.RetryPolicy{NoJitter: true, MaxAttempts: 3})
		recs, err := records.New(b.store, nil, records.Config{})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		rec, err := recs.Insert(ctx, "contacts", map[string]any{"email": "ada@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if err := links.New(b.store).Link(ctx, "hubspot", "contacts", rec.ID, "1"); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		got := map[string]int{}
		w := b.newWorker(t, &fakeReader{}, "w1", func(c *WorkerConfig) {
			c.Applier = recs
			c.Hooks.OnOutcome = countOutcomes(&mu, got)
		})
		at := b.clock.Now().UnixMilli()
		b.deliverEvents(t,
			whEvent("contact.propertyChange", 1, at, prop("firstname", "Ada")),
			whEvent("contact.propertyChange", 1, at, prop("lastname", "Lovelace")),
			whEvent("contact.propertyChange", 1, at, prop("phone", "555")),
		)
		if n := drain(t, w); n != 3 {
			t.Fatalf("claimed %d, want 3", n)
		}
		if got := b.statusCounts(t); got["processed"] != 3 {
			t.Fatalf("statuses %v, want 3 processed", got)
		}
		after, err := recs.Get(ctx, "contacts", rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if after.Version != rec.Version+1 {
			t.Errorf("version %d after the edit, want %d: one write for its three properties", after.Version, rec.Version+1)
		}
		if after.Fields["first_name"] != "Ada" || after.Fields["last_name"] != "Lovelace" || after.Fields["phone"] != "555" {
			t.Errorf("fields %v", after.Fields)
		}
		if got[OutcomeApplied] != 3 {
			t.Errorf("outcomes %v, want 3 applied", got)
		}
		// The same edit delivered again is stale in every property.
		evs := []hubspot.WebhookEvent{
			whEvent("contact.propertyChange", 1, at, prop("firstname", "Ada")),
			whEvent("contact.propertyChange", 1, at, prop("lastname", "Lovelace")),
		}
		b.deliverEvents(t, evs...)
		drain(t, w)
		if got[OutcomeStale] != 2 {
			t.Errorf("outcomes %v after a replay, want 2 stale", got)
		}
	})
}
