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
