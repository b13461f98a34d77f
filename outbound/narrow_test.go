package outbound_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/store"
)

// refuseOnce is a budget that refuses its first reservation.
type refuseOnce struct {
	budget.Budget
	refused atomic.Bool
}

func (b *refuseOnce) Reserve(ctx context.Context, key string, tokens int) (budget.Reservation, error) {
	if b.refused.CompareAndSwap(false, true) {
		return budget.Reservation{RetryAfter: time.Millisecond}, nil
	}
	return b.Budget.Reserve(ctx, key, tokens)
}

// blockingUpsert holds every batch upsert until release is closed, and
// counts the upserts that started.
type blockingUpsert struct {
	outbound.HubSpot
	started atomic.Int32
	release chan struct{}
}

func (h *blockingUpsert) BatchUpsert(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpsertInput) (*hubspot.BatchResult, error) {
	h.started.Add(1)
	select {
	case <-h.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return h.HubSpot.BatchUpsert(ctx, t, in)
}

// TestRefusedWorkerRunsOneCycle: for NarrowFor after the budget refused one
// of its cycles, a worker runs one cycle at a time. While its first loop's
// cycle waits on HubSpot, another record's event stays pending, although a
// second loop is free: that loop looks (the hook) and stands aside. Once
// NarrowFor has passed, the loops overlap again.
func TestRefusedWorkerRunsOneCycle(t *testing.T) {
	b := setup(t, options{})
	ctx := context.Background()
	hs := &blockingUpsert{HubSpot: b.client, release: make(chan struct{})}
	var narrowed atomic.Int32
	w := b.worker(t, func(c *outbound.Config) {
		c.Budget = &refuseOnce{Budget: b.budget}
		c.HubSpot = hs
		c.Concurrency = 2
		c.BatchSize = 1
		c.FillWait = -1
		c.Hold = -1 // narrowing alone: the free loop claims at once
	})
	outbound.SetNarrowedHook(w, func() { narrowed.Add(1) })
	wl := newWorkload(b, 3)

	// The first cycle is refused: its record is released, and the worker
	// narrows to one loop.
	wl.insert(t, "contacts", map[string]any{"email": "first@example.com"})
	if s, err := w.RunOnce(ctx); err != nil || s.BudgetRetryAfter <= 0 {
		t.Fatalf("first cycle = %+v, %v; want refused by the budget", s, err)
	}
	b.clock.Advance(time.Second) // past the refusal's wait, within NarrowFor

	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-hs.release:
		default:
			close(hs.release)
		}
		w.Stop(context.Background()) //nolint:errcheck // the test's outcome is settled
	})
	testwait.For(t, "the first record's upsert", func() bool { return hs.started.Load() == 1 })

	// A second record while the one cycle waits on HubSpot: the free loop
	// looks after the notification and stands aside.
	wl.insert(t, "contacts", map[string]any{"email": "second@example.com"})
	seen := narrowed.Load()
	w.Notify()
	testwait.For(t, "the second loop to look again", func() bool { return narrowed.Load() > seen })
	if n := b.counts(t)[store.StatusPending]; n != 1 {
		t.Fatalf("%d pending events while the narrowed worker's one cycle waits; want the second record's 1 (a second loop claimed it)", n)
	}
	if got := hs.started.Load(); got != 1 {
		t.Fatalf("%d upserts started; want 1 while narrowed", got)
	}

	// NarrowFor later, the second loop claims again, and both finish.
	b.clock.Advance(outbound.NarrowFor)
	w.Notify()
	testwait.For(t, "the second record's upsert from the free loop", func() bool { return hs.started.Load() == 2 })
	close(hs.release)
	testwait.For(t, "both records processed", func() bool { return b.counts(t)[store.StatusProcessed] == 2 })
}
