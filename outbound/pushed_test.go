package outbound_test

import (
	"context"
	"testing"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/store"
)

// TestDeadLetterCarriedAndSuperseded: a change that is dead-lettered reaches
// HubSpot with the record's next successful write; re-queueing it afterwards
// costs no call and leaves HubSpot as it is; a dead letter that is still the
// record's newest change is sent when re-queued.
func TestDeadLetterCarriedAndSuperseded(t *testing.T) {
	t.Parallel()
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := setup(t, options{dialect: d})
			w := b.worker(t, nil)
			ctx := context.Background()
			wl := newWorkload(b, 1)
			id := wl.insert(t, "contacts", map[string]any{"email": "dl@example.com", "first_name": "One", "phone": "1"})
			b.drain(t, w)

			deadLetter := func() []store.OutboundEvent {
				t.Helper()
				dl, err := b.st.Outbound().DeadLetters(ctx, store.DeadLetterFilter{Key: "hubspot", Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				return dl
			}
			setFaults := func(f hubspotsim.Faults) {
				t.Helper()
				if err := b.sim.SetFaults(f); err != nil {
					t.Fatal(err)
				}
			}
			// v2 fails permanently (an injected 207 validation error).
			setFaults(hubspotsim.Faults{PartialFailure: 1})
			wl.update(t, "contacts", id, map[string]any{"first_name": "Five"})
			b.drain(t, w)
			if dl := deadLetter(); len(dl) != 1 {
				t.Fatalf("%d dead letters, want 1 (the fault did not bite?)", len(dl))
			}
			// v3 succeeds and carries v2's change too.
			setFaults(hubspotsim.Faults{})
			wl.update(t, "contacts", id, map[string]any{"phone": "6"})
			b.drain(t, w)
			b.verify(t, "contacts")

			// Re-queued afterwards, v2 is superseded: no call, HubSpot unchanged.
			before := b.sim.Counters().Requests
			if _, err := b.st.Outbound().RequeueAll(ctx, "hubspot"); err != nil {
				t.Fatal(err)
			}
			s := b.drain(t, w)
			if got := b.sim.Counters().Requests - before; got != 0 || s.Completed != 1 {
				t.Fatalf("re-queued older dead letter: %d calls, %d completed; want 0 calls, 1 completed", got, s.Completed)
			}
			if m := w.Metrics().Snapshot(); m.Superseded != 1 {
				t.Fatalf("Superseded = %d, want 1", m.Superseded)
			}
			b.verify(t, "contacts")

			// A dead letter that is the newest change is sent when re-queued.
			setFaults(hubspotsim.Faults{PartialFailure: 1})
			wl.update(t, "contacts", id, map[string]any{"last_name": "Newest"})
			b.drain(t, w)
			if dl := deadLetter(); len(dl) != 1 {
				t.Fatalf("%d dead letters, want 1", len(dl))
			}
			setFaults(hubspotsim.Faults{})
			if _, err := b.st.Outbound().RequeueAll(ctx, "hubspot"); err != nil {
				t.Fatal(err)
			}
			before = b.sim.Counters().Requests
			b.drain(t, w)
			if got := b.sim.Counters().Requests - before; got != 1 {
				t.Fatalf("re-queued newest dead letter made %d calls, want 1", got)
			}
			b.verify(t, "contacts")
			if dl := deadLetter(); len(dl) != 0 {
				t.Fatalf("%d dead letters left", len(dl))
			}
		})
	}
}

// TestArchivedRecordNotRevived: after a record is archived, a re-queued older
// change of it is superseded (it must not bring the object back); a new
// record is still written.
func TestArchivedRecordNotRevived(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w := b.worker(t, nil)
	ctx := context.Background()
	wl := newWorkload(b, 2)
	id := wl.insert(t, "contacts", map[string]any{"email": "gone@example.com", "phone": "1"})
	b.drain(t, w)
	if err := b.sim.SetFaults(hubspotsim.Faults{PartialFailure: 1}); err != nil {
		t.Fatal(err)
	}
	wl.update(t, "contacts", id, map[string]any{"phone": "2"})
	b.drain(t, w)
	if err := b.sim.SetFaults(hubspotsim.Faults{}); err != nil {
		t.Fatal(err)
	}
	wl.delete(t, "contacts", id)
	b.drain(t, w)
	b.verify(t, "contacts")
	before := b.sim.Counters().Requests
	if n, err := b.st.Outbound().RequeueAll(ctx, "hubspot"); err != nil || n != 1 {
		t.Fatalf("requeue: %d, %v", n, err)
	}
	b.drain(t, w)
	if got := b.sim.Counters().Requests - before; got != 0 {
		t.Fatalf("a re-queued change of an archived record made %d calls, want 0", got)
	}
	b.verify(t, "contacts")
	wl.insert(t, "contacts", map[string]any{"email": "again@example.com", "phone": "3"})
	b.drain(t, w)
	b.verify(t, "contacts")
}
