package outbound_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/outbound"
)

// grantLog is a budget that remembers its latest grant.
type grantLog struct {
	budget.Budget
	mu     sync.Mutex
	last   budget.Reservation
	grants int
}

func (g *grantLog) Reserve(ctx context.Context, key string, tokens int) (budget.Reservation, error) {
	r, err := g.Budget.Reserve(ctx, key, tokens)
	if err == nil && r.Granted {
		g.mu.Lock()
		g.last, g.grants = r, g.grants+1
		g.mu.Unlock()
	}
	return r, err
}

// inGrant is a HubSpot that checks that each write starts by the UseBy of
// the latest grant, then takes callTime by the injected clock.
type inGrant struct {
	outbound.HubSpot
	b        *bundle
	g        *grantLog
	callTime time.Duration
	mu       sync.Mutex
	calls    int
	late     []time.Duration
}

func (h *inGrant) check() {
	h.g.mu.Lock()
	last := h.g.last
	h.g.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	if now := h.b.clock.Now(); last.Late(now) {
		h.late = append(h.late, now.Sub(last.UseBy))
	}
}

func (h *inGrant) BatchUpdate(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpdateInput) (*hubspot.BatchResult, error) {
	h.check()
	defer h.b.clock.Advance(h.callTime)
	return h.HubSpot.BatchUpdate(ctx, t, in)
}

func (h *inGrant) BatchUpsert(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpsertInput) (*hubspot.BatchResult, error) {
	h.check()
	defer h.b.clock.Advance(h.callTime)
	return h.HubSpot.BatchUpsert(ctx, t, in)
}

// TestCallsStartWithinTheirGrant: a cycle whose calls take seconds each
// reserves each call right before making it, so every call starts by its
// grant's UseBy and is counted in the budget's window when it is made; a
// cycle that reserved all its calls up front would make the later ones after
// their grant's window had moved on.
func TestCallsStartWithinTheirGrant(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	wl := newWorkload(b, 5)
	known := wl.insert(t, "contacts", map[string]any{"email": "known@example.com", "phone": "1"})
	b.drain(t, b.worker(t, nil))
	wl.update(t, "contacts", known, map[string]any{"phone": "2"})                      // an update by id
	wl.insert(t, "contacts", map[string]any{"email": "new@example.com", "phone": "3"}) // an upsert
	bud, err := budget.NewMemory(budget.Config{Limit: 100, Now: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	g := &grantLog{Budget: bud}
	hs := &inGrant{HubSpot: b.client, b: b, g: g, callTime: 3 * time.Second}
	w := b.worker(t, func(c *outbound.Config) { c.HubSpot = hs; c.Budget = g })
	s, err := w.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if hs.calls != 2 || g.grants != 2 || s.Completed != 2 {
		t.Fatalf("%d calls, %d grants, summary %+v; want 2 calls on 2 grants, both records completed", hs.calls, g.grants, s)
	}
	if len(hs.late) > 0 {
		t.Fatalf("calls started %v after their grant's UseBy", hs.late)
	}
	b.verify(t, "contacts")
}
