package outbound_test

import (
	"context"
	"fmt"
	"github.com/hubsync/hubsync/internal/testwait"
	"sync"
	"testing"
	"time"

	hubsync "github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/store"
)

// claimCounter counts how often each event is handed out by any replica's Claim.
type claimCounter struct {
	mu     sync.Mutex
	claims map[string]int
}

// TestTwoReplicasOnPostgres: two "replicas" — each with its own database
// handle, store, links, SQL budget and several cycles in flight — push
// contacts and companies from one PostgreSQL database while the application
// writes. Every record ends in HubSpot exactly as it is locally, HubSpot
// holds no duplicate, and no event is handed out (so written) twice.
func TestTwoReplicasOnPostgres(t *testing.T) {
	t.Parallel()
	b := setup(t, options{dialect: store.Postgres, tenSecond: 1_000_000})
	ctx := context.Background()
	cc := &claimCounter{claims: map[string]int{}}
	cnt := newCounting(b.client)
	var ws []*outbound.Worker
	for i := range 2 {
		db, err := hubsync.Open(ctx, b.db.URL, store.Config{Now: b.clock.Now, Retry: testRetry})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.SQL.Close() })
		bud, err := budget.NewSQL(db.SQL, store.Postgres, budget.Config{Limit: 100_000, Now: b.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		w := b.worker(t, func(c *outbound.Config) {
			c.Store = &claimCounterView{cc: cc, OutboundRepository: db.Store.Outbound()}
			c.Links = links.New(db.Store)
			c.Budget = bud
			c.HubSpot = cnt
			c.BatchSize = 15
			c.Concurrency = 3
			c.Owner = fmt.Sprint("replica", i)
		})
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Stop(ctx) })
		ws = append(ws, w)
	}
	wl := newWorkload(b, 21)
	var inserted int
	for i := range 120 {
		wl.insert(t, "contacts", map[string]any{"email": fmt.Sprintf("rep%d@example.com", i), "first_name": "R"})
		wl.insert(t, "companies", map[string]any{"name": fmt.Sprint("Co", i), "employees": float64(i)})
		inserted += 2
		if i%5 == 0 {
			id, _ := wl.pick("companies")
			wl.update(t, "companies", id, map[string]any{"city": fmt.Sprint("C", i)})
			id, _ = wl.pick("contacts")
			wl.update(t, "contacts", id, map[string]any{"first_name": fmt.Sprint("U", i)})
		}
		if i%10 == 0 {
			for _, w := range ws {
				w.Notify()
			}
		}
	}
	testwait.For(t, "queue drained", func() bool {
		c := b.counts(t)
		return c[store.StatusPending] == 0 && c[store.StatusProcessing] == 0
	})
	for _, w := range ws {
		if err := w.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	b.verify(t, "contacts")
	b.verify(t, "companies")
	if n := b.counts(t)[store.StatusFailed]; n != 0 {
		t.Fatalf("%d dead letters", n)
	}
	if got := b.sim.Counters().ObjectsCreated; got != int64(inserted) {
		t.Fatalf("HubSpot created %d objects for %d local records", got, inserted)
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	for id, n := range cc.claims {
		if n != 1 {
			t.Errorf("event %s handed out %d times", id, n)
		}
	}
	var done [2]int64
	for i, w := range ws {
		done[i] = w.Metrics().Snapshot().Completed
	}
	if int(done[0]+done[1]) != len(cc.claims) {
		t.Fatalf("completed %d+%d events, claimed %d distinct", done[0], done[1], len(cc.claims))
	}
	t.Logf("replica 0 completed %d events, replica 1 %d; %d HubSpot calls", done[0], done[1], b.sim.Counters().Requests)
}

// claimCounterView is one replica's repository, counting into a shared claimCounter.
type claimCounterView struct {
	store.OutboundRepository
	cc *claimCounter
}

func (v *claimCounterView) Claim(ctx context.Context, p store.ClaimParams) ([]store.OutboundEvent, error) {
	evs, err := v.OutboundRepository.Claim(ctx, p)
	v.cc.mu.Lock()
	for _, e := range evs {
		v.cc.claims[e.ID]++
	}
	v.cc.mu.Unlock()
	return evs, err
}

// TestNoDuplicateCompaniesOrDeals: companies and deals are upserted by the
// record id (hubsync_record_id), so connections dropped before or after
// HubSpot applied a write, and answers lost to a timeout, never leave a
// duplicate object, even for records deleted before their write was confirmed.
func TestNoDuplicateCompaniesOrDeals(t *testing.T) {
	t.Parallel()
	b := setup(t, options{timeout: 300 * time.Millisecond, faults: hubspotsim.Faults{
		DropProbability: 0.25, Error503: 0.05, HangProbability: 0.1, HangDuration: time.Second,
	}})
	w := b.worker(t, func(c *outbound.Config) { c.BatchSize = 10; c.LeaseDuration = time.Minute })
	wl := newWorkload(b, 22)
	inserted := 0
	for round := range 3 {
		for i := range 25 {
			n := round*100 + i
			wl.insert(t, "companies", map[string]any{"name": fmt.Sprint("Co", n), "industry": "X"})
			wl.insert(t, "deals", map[string]any{"name": fmt.Sprint("Deal", n), "amount": float64(n), "stage": "open"})
			inserted += 2
		}
		for _, ot := range []string{"companies", "deals"} {
			for i := range 5 {
				id, _ := wl.pick(ot)
				if i == 0 {
					wl.delete(t, ot, id)
					continue
				}
				patch := map[string]any{"name": fmt.Sprint("Renamed", round, i)}
				wl.update(t, ot, id, patch)
			}
		}
		b.drain(t, w)
	}
	b.verify(t, "companies")
	b.verify(t, "deals")
	if n := b.counts(t)[store.StatusFailed]; n != 0 {
		t.Fatalf("%d dead letters, want none", n)
	}
	c := b.sim.Counters()
	if c.FaultsInjected["drop"] == 0 || c.FaultsInjected["hang"] == 0 {
		t.Fatalf("faults did not bite: %v", c.FaultsInjected)
	}
	// Every object HubSpot ever created is a local record's (a deleted record
	// may never have reached it): a lost answer's retry found its object.
	if c.ObjectsCreated > int64(inserted) {
		t.Fatalf("HubSpot created %d objects for %d local records: duplicates", c.ObjectsCreated, inserted)
	}
	for _, ot := range []string{"companies", "deals"} {
		seen := map[string]bool{}
		for _, o := range b.sim.Objects(ot) {
			id := o.Properties["hubsync_record_id"]
			if id == "" || seen[id] {
				t.Fatalf("%s object %s: hubsync_record_id %q missing or shared", ot, o.ID, id)
			}
			seen[id] = true
		}
	}
	if got := c.RequestsByPath["POST /crm/v3/objects/companies/batch/create"] + c.RequestsByPath["POST /crm/v3/objects/deals/batch/create"]; got != 0 {
		t.Fatalf("%d plain creates; companies and deals must be upserted", got)
	}
}
