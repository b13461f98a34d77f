package outbound_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/hubsync/hubsync/budget"
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
