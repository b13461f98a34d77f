package outbound_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/store"
)

// TestOutbound429PausesOtherReplicas checks the README's promise "after a 429,
// every replica pauses": two replicas, each with its own connection pool,
// database budget and HubSpot client wired as the server wires them (the
// client's response hook feeds budget.ObserveHubSpot). After HubSpot answers
// one replica's write with a 429, the other replica's next cycle makes no call
// at all and releases its work without using an attempt; once the pause is
// over it syncs everything.
func TestOutbound429PausesOtherReplicas(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, options{dialect: d})
		ctx := context.Background()
		var ws [2]*outbound.Worker
		for i := range ws {
			db, err := hubsync.Open(ctx, b.db.URL, store.Config{Now: b.clock.Now, Retry: testRetry})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.SQL.Close() })
			bud, err := budget.NewSQL(db.SQL, d, budget.Config{Limit: 10_000, Now: b.clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			client, err := hubspot.NewClient(hubspot.Config{BaseURL: b.sim.URL(), AccessToken: hubspotsim.AccessTokenDefault,
				Timeout: b.timeout, OnResponse: budget.ObserveHubSpot(bud, budgetKey, testLogger())})
			if err != nil {
				t.Fatal(err)
			}
			ws[i] = b.worker(t, func(c *outbound.Config) {
				c.Store = db.Store.Outbound()
				c.Links = links.New(db.Store)
				c.Budget = bud
				c.HubSpot = client
				c.Owner = fmt.Sprint("replica-", i)
			})
		}
		wl := newWorkload(b, 5)

		// Replica 0's write is answered 429.
		if err := b.sim.SetFaults(hubspotsim.Faults{Error429: 1}); err != nil {
			t.Fatal(err)
		}
		wl.insert(t, "contacts", map[string]any{"email": "first@example.com", "first_name": "A"})
		s0, err := ws[0].RunOnce(ctx)
		if err != nil {
			t.Logf("replica 0 cycle: %v", err)
		}
		if s0.Calls == 0 || s0.Completed != 0 {
			t.Fatalf("replica 0's cycle under 429s = %+v; want a call and nothing completed", s0)
		}
		if n := b.sim.Counters().FaultsInjected["error429"]; n == 0 {
			t.Fatalf("the simulator injected no 429 (counters %+v)", b.sim.Counters())
		}

		// HubSpot is fine again, but the budget is paused: replica 1 must not call.
		if err := b.sim.SetFaults(hubspotsim.Faults{}); err != nil {
			t.Fatal(err)
		}
		b.sim.ResetCounters()
		wl.insert(t, "contacts", map[string]any{"email": "second@example.com", "first_name": "B"})
		s1, err := ws[1].RunOnce(ctx)
		if err != nil {
			t.Logf("replica 1 cycle: %v", err)
		}
		if n := b.sim.Counters().Requests; n != 0 || s1.Calls != 0 {
			t.Fatalf("replica 1 made %d HubSpot requests (cycle %+v) right after replica 0 got a 429; the shared budget must pause every replica", n, s1)
		}
		if s1.Claimed == 0 || s1.Released != s1.Claimed || s1.Retried != 0 || s1.BudgetRetryAfter <= 0 {
			t.Fatalf("replica 1's paused cycle = %+v; want its claimed events released (no attempt used) with a budget wait", s1)
		}

		// After the pause both records reach HubSpot.
		b.clock.Advance(s1.BudgetRetryAfter + time.Second)
		b.drain(t, ws[0], ws[1])
		if got := b.sim.Counters().ObjectsCreated; got != 2 {
			t.Fatalf("HubSpot created %d contacts after the pause, want 2", got)
		}
		if n := b.counts(t)[store.StatusFailed]; n != 0 {
			t.Fatalf("%d dead letters", n)
		}
	})
}

// TestBudgetRefusalStopsClaims checks that once the budget refused one of a
// worker's cycles, the worker claims nothing until the budget said it has
// room: events claimed only to be released would be written twice for
// nothing, and their scattered due times would split the backlog into small
// calls afterwards.
func TestBudgetRefusalStopsClaims(t *testing.T) {
	b := setup(t, options{budgetLimit: 1})
	ctx := context.Background()
	// Someone else spent the window.
	if res, err := b.budget.Reserve(ctx, budgetKey, 1); err != nil || !res.Granted {
		t.Fatalf("reserve: %+v %v", res, err)
	}
	w := b.worker(t, nil)
	wl := newWorkload(b, 3)
	wl.insert(t, "contacts", map[string]any{"email": "first@example.com", "first_name": "A"})
	s1, err := w.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s1.Claimed == 0 || s1.Released != s1.Claimed || s1.BudgetRetryAfter <= 0 {
		t.Fatalf("refused cycle = %+v; want its events released with a budget wait", s1)
	}
	// A change queued during the wait is due at once, but the budget still
	// has no room: the next cycle leaves it pending.
	wl.insert(t, "contacts", map[string]any{"email": "second@example.com", "first_name": "B"})
	b.clock.Advance(s1.BudgetRetryAfter / 2)
	s2, err := w.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Claimed != 0 || s2.BudgetRetryAfter <= 0 || s2.BudgetRetryAfter > s1.BudgetRetryAfter {
		t.Fatalf("cycle during the budget's wait = %+v; want nothing claimed and the rest of the wait (at most %s)", s2, s1.BudgetRetryAfter)
	}
	if got := b.counts(t)[store.StatusProcessing]; got != 0 {
		t.Fatalf("%d events processing during the budget's wait", got)
	}
	// Once the wait is over, both changes go out together.
	b.clock.Advance(s2.BudgetRetryAfter + time.Second)
	s3, err := w.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s3.Claimed != 2 || s3.Completed != 2 || s3.Calls != 1 {
		t.Fatalf("cycle after the wait = %+v; want both events in one call", s3)
	}
}

// TestBudgetBookedCallWaitsForItsInstant: when the window is full but frees
// within Config.BudgetAhead, the cycle books the freed room, keeps its
// records and calls at the booked instant, not before; with BudgetAhead
// negative it releases them as before.
func TestBudgetBookedCallWaitsForItsInstant(t *testing.T) {
	for _, book := range []bool{true, false} {
		t.Run(map[bool]string{true: "booked", false: "released"}[book], func(t *testing.T) {
			b := setup(t, options{budgetLimit: 1})
			ctx := context.Background()
			// Someone else spent the window; its room frees in 10 s (plus up to
			// a bucket and the call lead), of which 9.7 s pass by the fake clock.
			if res, err := b.budget.Reserve(ctx, budgetKey, 1); err != nil || !res.Granted {
				t.Fatalf("reserve: %+v %v", res, err)
			}
			spent := b.clock.Now()
			b.clock.Advance(10*time.Second - 300*time.Millisecond)
			w := b.worker(t, func(c *outbound.Config) {
				if !book {
					c.BudgetAhead = -1
				}
			})
			wl := newWorkload(b, 3)
			wl.insert(t, "contacts", map[string]any{"email": "booked@example.com", "first_name": "A"})
			// The worker's timer runs on real time; the fake clock stands still,
			// so the real time waited is the booked instant's distance.
			started := time.Now()
			s, err := w.RunOnce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			waited := time.Since(started)
			booked := w.Metrics().Snapshot().BudgetBooked
			if !book {
				if s.Calls != 0 || s.Released != s.Claimed || s.BudgetRetryAfter <= 0 || booked != 0 {
					t.Fatalf("cycle with BudgetAhead < 0 = %+v, %d booked; want its events released with a wait", s, booked)
				}
				return
			}
			if s.Calls != 1 || s.Completed != s.Claimed || s.Released != 0 || booked != 1 {
				t.Fatalf("cycle = %+v, %d booked; want one booked call and its events completed", s, booked)
			}
			// The call may not start before the spent grant leaves the budget's
			// window: 10 s after it, by the budget's clock.
			if early := spent.Add(10 * time.Second).Sub(b.clock.Now()); waited < early {
				t.Fatalf("the cycle called after %s; the room it booked frees only after %s", waited, early)
			}
			if res, err := b.budget.Reserve(ctx, budgetKey, 1); err != nil || res.Granted {
				t.Fatalf("reserve after the booked call: %+v %v; want refused, the room was the booked call's", res, err)
			}
		})
	}
}
