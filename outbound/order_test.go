package outbound_test

import (
	"context"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/storetest"
)

// TestSkewedReplicaClocks: a record's v2 is written by a replica whose clock
// is 50 ms ahead and its v3, afterwards, by one whose clock is behind, so v3's
// event has the earlier CreatedDate. HubSpot must end with v3's values: the
// store orders a record's changes by the sequence the database assigned, not
// by the enqueueing clocks.
func TestSkewedReplicaClocks(t *testing.T) {
	t.Parallel()
	for _, d := range []store.Dialect{store.SQLite, store.Postgres, store.MySQL} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := setup(t, options{dialect: d})
			w := b.worker(t, nil)
			ctx := context.Background()
			id := newWorkload(b, 1).insert(t, "contacts", map[string]any{"email": "skew@example.com", "first_name": "One"})
			b.drain(t, w)

			// Replica "ahead" runs 50 ms ahead of the worker's clock; the
			// application's own service (b.recs, on b.clock) is behind it.
			ahead := storetest.NewClock(b.clock.Now().Add(50 * time.Millisecond))
			stAhead := openStore(t, b.db, ahead)
			recsAhead, err := records.New(stAhead, links.New(stAhead), records.Config{})
			if err != nil {
				t.Fatal(err)
			}
			v2, err := recsAhead.Update(ctx, "contacts", id, 1, map[string]any{"first_name": "Two", "phone": "2"})
			if err != nil {
				t.Fatal(err)
			}
			v3, err := b.recs.Update(ctx, "contacts", id, v2.Version, map[string]any{"first_name": "Three"})
			if err != nil {
				t.Fatal(err)
			}
			b.clock.Advance(100 * time.Millisecond) // v2's event is due only by the ahead clock's time
			evs, err := b.st.Outbound().GetPending(ctx, "hubspot", 10)
			if err != nil {
				t.Fatal(err)
			}
			all, err := b.st.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot", Owner: "peek"})
			if err != nil || len(all) != 2 || len(evs) != 1 {
				t.Fatalf("fixture: pending %d, claimed %v (%v); want one head and two events", len(evs), all, err)
			}
			if !all[1].CreatedDate.Before(all[0].CreatedDate) || all[0].Seq >= all[1].Seq {
				t.Fatalf("claim order: %s (seq %d, created %s), %s (seq %d, created %s); want v2 then v3 by Seq, v3 created earlier",
					all[0].ID, all[0].Seq, all[0].CreatedDate, all[1].ID, all[1].Seq, all[1].CreatedDate)
			}
			if err := b.st.Outbound().Release(ctx, 0, all[0].Lease(), all[1].Lease()); err != nil {
				t.Fatal(err)
			}

			b.drain(t, w)
			b.verify(t, "contacts")
			linked, _, err := b.links.Lookup(ctx, "hubspot", "contacts", id)
			if err != nil {
				t.Fatal(err)
			}
			o, _ := b.sim.Object("contacts", linked)
			if o.Properties["firstname"] != "Three" || o.Properties["phone"] != "2" {
				t.Fatalf("HubSpot has %v; want v3's first name (Three) and v2's phone (2); local is version %d", o.Properties, v3.Version)
			}
		})
	}
}

// TestRequeuedDeadLetterSkewedClock: a change dead-lettered on a replica
// whose clock was ahead, then overtaken by a newer change from a replica
// whose clock is behind (so the newer event has the earlier CreatedDate), is
// superseded when re-queued: HubSpot keeps the newer values.
func TestRequeuedDeadLetterSkewedClock(t *testing.T) {
	t.Parallel()
	for _, d := range []store.Dialect{store.SQLite, store.Postgres, store.MySQL} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := setup(t, options{dialect: d})
			w := b.worker(t, nil)
			ctx := context.Background()
			id := newWorkload(b, 1).insert(t, "contacts", map[string]any{"email": "dl-skew@example.com", "first_name": "One"})
			b.drain(t, w)
			replica := func(at time.Time) *records.Service {
				t.Helper()
				st := openStore(t, b.db, storetest.NewClock(at))
				r, err := records.New(st, links.New(st), records.Config{})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			setFaults := func(f hubspotsim.Faults) {
				t.Helper()
				if err := b.sim.SetFaults(f); err != nil {
					t.Fatal(err)
				}
			}

			aheadAt := b.clock.Now().Add(50 * time.Millisecond)
			setFaults(hubspotsim.Faults{PartialFailure: 1})
			v2, err := replica(aheadAt).Update(ctx, "contacts", id, 1, map[string]any{"first_name": "Two"})
			if err != nil {
				t.Fatal(err)
			}
			b.clock.Advance(100 * time.Millisecond)
			b.drain(t, w)
			dl, err := b.st.Outbound().DeadLetters(ctx, store.DeadLetterFilter{Key: "hubspot"})
			if err != nil || len(dl) != 1 {
				t.Fatalf("dead letters %v (%v); want v2's event (the fault did not bite?)", dl, err)
			}
			setFaults(hubspotsim.Faults{})
			if _, err := replica(aheadAt.Add(-50*time.Millisecond)).Update(ctx, "contacts", id, v2.Version, map[string]any{"first_name": "Three"}); err != nil {
				t.Fatal(err)
			}
			b.drain(t, w)
			b.verify(t, "contacts")

			before := b.sim.Counters().Requests
			if n, err := b.st.Outbound().Requeue(ctx, dl[0].ID); err != nil || n != 1 {
				t.Fatalf("Requeue = %d, %v", n, err)
			}
			b.drain(t, w)
			if got := b.sim.Counters().Requests - before; got != 0 {
				t.Fatalf("the re-queued older change made %d calls, want 0 (superseded)", got)
			}
			b.verify(t, "contacts")
		})
	}
}
