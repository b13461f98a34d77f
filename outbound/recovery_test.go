package outbound_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/outbound"
)

// deadlineCalls is a HubSpot whose upserts report the deadline of the
// context they were given (-1 for none), then wait for release (or the deadline) before
// answering.
type deadlineCalls struct {
	outbound.HubSpot
	entered chan time.Duration // the time left before the call's deadline; -1 for none
	release chan struct{}
	once    sync.Once
}

func newDeadlineCalls(hs outbound.HubSpot) *deadlineCalls {
	return &deadlineCalls{HubSpot: hs, entered: make(chan time.Duration, 1), release: make(chan struct{})}
}

func (h *deadlineCalls) unblock() { h.once.Do(func() { close(h.release) }) }

func (h *deadlineCalls) BatchUpsert(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpsertInput) (*hubspot.BatchResult, error) {
	left := time.Duration(-1)
	if dl, ok := ctx.Deadline(); ok {
		left = time.Until(dl)
	}
	h.entered <- left
	select {
	case <-h.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return h.HubSpot.BatchUpsert(ctx, t, in)
}

// pendingID returns the id of the one pending outbound event.
func pendingID(t *testing.T, b *bundle) string {
	t.Helper()
	evs, err := b.st.Outbound().GetPending(context.Background(), "hubspot", 10)
	if err != nil || len(evs) != 1 {
		t.Fatalf("pending events: %d, %v; want 1", len(evs), err)
	}
	return evs[0].ID
}

// TestDefaultsBoundTheLeaseACallLeaves: with the default lease and HTTP
// timeout, the lease a cycle holds while its call runs (what a replica
// SIGKILLed then leaves to wait out) is at most 1.5 × HTTPTimeoutDefault +
// 1 s = 16 s, and the call runs under its own deadline of at most
// HTTPTimeoutDefault. The old defaults (a 30 s timeout the worker assumed of
// its client) left 46 s, and the call had no deadline of the worker's.
func TestDefaultsBoundTheLeaseACallLeaves(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	wl := newWorkload(b, 5)
	wl.insert(t, "contacts", map[string]any{"email": "lease@example.com", "phone": "1"})
	id := pendingID(t, b)
	hs := newDeadlineCalls(b.client)
	t.Cleanup(hs.unblock)
	w := b.worker(t, func(c *outbound.Config) {
		c.HubSpot = hs
		c.LeaseDuration, c.HTTPTimeout = 0, 0 // the defaults
	})
	done := make(chan error, 1)
	go func() {
		_, err := w.RunOnce(context.Background())
		done <- err
	}()
	left := testwait.Recv(t, "the cycle's call", hs.entered)
	ev, err := b.st.Outbound().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	leased := ev.LeaseExpiresDate.Sub(b.clock.Now())
	// Issue 16: a killed replica's events are claimed again within 30 s at
	// p99; 16 s of lease leaves the rest for the next claim and the work.
	const most = 16 * time.Second
	if leased > most {
		t.Errorf("during the call the event is leased for %s more; want at most %s (a killed replica's events wait that long)", leased, most)
	}
	if leased < outbound.HTTPTimeoutDefault*3/2 {
		t.Errorf("during the call the event is leased for %s more; want at least the call's timeout and the margin to store its result, %s", leased, outbound.HTTPTimeoutDefault*3/2)
	}
	if left < 0 || left > 10*time.Second {
		t.Errorf("the call's deadline is %s away (negative: none); want at most 10s", left)
	}
	hs.unblock()
	if err := testwait.Recv(t, "the cycle's end", done); err != nil {
		t.Fatal(err)
	}
	b.verify(t, "contacts")
}

// TestCallDeadlineRetries: a call that runs out of HTTPTimeout is given up
// and its events retried (an attempt, as for the client's own timeout), so
// that it is never answered after the lease it was made under.
func TestCallDeadlineRetries(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	wl := newWorkload(b, 5)
	wl.insert(t, "contacts", map[string]any{"email": "hang@example.com", "phone": "1"})
	id := pendingID(t, b)
	hs := newDeadlineCalls(b.client)
	t.Cleanup(hs.unblock)
	w := b.worker(t, func(c *outbound.Config) {
		c.HubSpot = hs
		c.HTTPTimeout = 100 * time.Millisecond
	})
	type result struct {
		s   outbound.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := w.RunOnce(context.Background())
		done <- result{s, err}
	}()
	testwait.Recv(t, "the cycle's call", hs.entered)
	res := testwait.Recv(t, "the call to run out of its deadline", done)
	if res.s.Calls != 1 || res.s.Retried != 1 || res.s.Released != 0 {
		t.Fatalf("cycle: %+v, err %v; want 1 call and its event retried", res.s, res.err)
	}
	ev, err := b.st.Outbound().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ev.ErrorMessage, "HTTPTimeout") {
		t.Fatalf("the retried event's error is %q; want it to name HTTPTimeout", ev.ErrorMessage)
	}
}

// slowBudget is a budget whose reservations take reserveTime by the
// injected clock.
type slowBudget struct {
	budget.Budget
	b           *bundle
	reserveTime time.Duration
}

func (s *slowBudget) Reserve(ctx context.Context, key string, tokens int) (budget.Reservation, error) {
	s.b.clock.Advance(s.reserveTime)
	return s.Budget.Reserve(ctx, key, tokens)
}

// TestCallDeadlineFitsTheLease: when the lease cannot be extended and the
// reservation before the call took long, the call's deadline is cut to end
// where the lease less the margin for storing the result does: with a 10 s
// lease, a 4 s HTTP timeout (2 s margin) and a 5 s reservation, 3 s, not 4.
func TestCallDeadlineFitsTheLease(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	wl := newWorkload(b, 5)
	wl.insert(t, "contacts", map[string]any{"email": "cut@example.com", "phone": "1"})
	hs := newDeadlineCalls(b.client)
	t.Cleanup(hs.unblock)
	repo := &slowClaim{OutboundRepository: b.st.Outbound(), b: b, extendErr: errors.New("database unreachable")}
	w := b.worker(t, func(c *outbound.Config) {
		c.Store = repo
		c.HubSpot = hs
		c.Budget = &slowBudget{Budget: b.budget, b: b, reserveTime: 5 * time.Second}
		c.LeaseDuration = 10 * time.Second
		c.HTTPTimeout = 4 * time.Second
	})
	done := make(chan error, 1)
	go func() {
		_, err := w.RunOnce(context.Background())
		done <- err
	}()
	left := testwait.Recv(t, "the cycle's call", hs.entered)
	if left < 0 || left > 3*time.Second {
		t.Errorf("the call's deadline is %s away (negative: none); want at most 3s, where the lease less the margin ends", left)
	}
	hs.unblock()
	testwait.Recv(t, "the cycle's end", done)
}
