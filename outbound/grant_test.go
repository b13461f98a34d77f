package outbound_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/store"
)

// answers records the grants the budget is told calls were answered under.
type answers struct {
	budget.Scheduler
	mu     sync.Mutex
	grants []budget.Reservation
}

func (a *answers) Observe(ctx context.Context, key string, o budget.Observation) error {
	if o.Grant.Granted {
		a.mu.Lock()
		a.grants = append(a.grants, o.Grant)
		a.mu.Unlock()
	}
	return a.Scheduler.Observe(ctx, key, o)
}

// Every HubSpot call of a cycle is made under its grant (budget.WithCall), so
// that its answer tells the budget to count it from then (a call answered at
// once frees its room sooner, a late one stays counted): one answered grant
// per call, creates, updates and archives alike.
func TestCallsAreCountedFromTheirAnswer(t *testing.T) {
	b := setup(t, options{})
	rec := &answers{Scheduler: b.budget.(budget.Scheduler)}
	b.budget = rec
	b.client = b.newClient(t, "")
	w := b.worker(t, nil)
	ctx := context.Background()
	wl := newWorkload(b, 3)

	var ids []string
	for i := range 3 {
		ids = append(ids, wl.insert(t, "contacts", map[string]any{"email": fmt.Sprintf("a%d@example.com", i), "first_name": "A"}))
	}
	var calls int
	run := func() {
		t.Helper()
		s, err := w.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		calls += s.Calls
	}
	run()
	wl.update(t, "contacts", ids[0], map[string]any{"first_name": "B"})
	wl.delete(t, "contacts", ids[1])
	run()
	if calls < 3 {
		t.Fatalf("%d calls; the test needs a create, an update and an archive", calls)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.grants) != calls {
		t.Fatalf("%d answers observed with their grant, for %d calls; want one per call", len(rec.grants), calls)
	}
}

// pauseAfterBooking is a budget on which HubSpot answers some other call 429
// right after each booking ahead: the pause comes while the booked call
// waits for its instant.
type pauseAfterBooking struct {
	budget.Scheduler
	key string
}

func (p pauseAfterBooking) Schedule(ctx context.Context, key string, tokens int, within time.Duration) (budget.Reservation, error) {
	r, err := p.Scheduler.Schedule(ctx, key, tokens, within)
	if err == nil && r.Wait > 0 {
		err = p.Observe(ctx, p.key, budget.Observation{RateLimited: true, Policy: budget.PolicyTenSecondlyRolling, RetryAfter: 30 * time.Second})
	}
	return r, err
}

// A call booked ahead does not go out if HubSpot answered a 429 while it
// waited for its instant: the pause holds for every call, booked or not. Its
// records are released, without an attempt used, until the pause ends.
func TestBookedCallWaitsOutAPause(t *testing.T) {
	const limit = 5
	b := setup(t, options{budgetLimit: limit})
	ctx := context.Background()
	// The window is full; its room frees 10.3 s after now, which the
	// cycle is 300 ms (plus the lead) away from: it books.
	if r, err := b.budget.Reserve(ctx, budgetKey, limit); err != nil || !r.Granted {
		t.Fatalf("Reserve = %+v, %v", r, err)
	}
	b.clock.Advance(10*time.Second - 300*time.Millisecond)
	b.budget = pauseAfterBooking{Scheduler: b.budget.(budget.Scheduler), key: budgetKey}
	w := b.worker(t, nil)
	wl := newWorkload(b, 4)
	wl.insert(t, "contacts", map[string]any{"email": "booked@example.com", "first_name": "A"})

	s, err := w.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := b.sim.Counters().Requests; n != 0 || s.Calls != 0 {
		t.Fatalf("the booked call went out under a pause: %d requests, summary %+v", n, s)
	}
	if s.BudgetRetryAfter < 30*time.Second || s.Released != 1 {
		t.Fatalf("summary %+v; want the record released for the 429's 30 s", s)
	}
	if c := b.counts(t); c[store.StatusPending] != 1 {
		t.Fatalf("events by status %v; want the event pending again", c)
	}
}
