package outbound_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/store"
)

// recordingHubSpot remembers the properties of every update it passes on.
type recordingHubSpot struct {
	outbound.HubSpot
	mu      sync.Mutex
	updates []map[string]string
}

func (r *recordingHubSpot) BatchUpdate(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpdateInput) (*hubspot.BatchResult, error) {
	r.mu.Lock()
	for _, x := range in {
		r.updates = append(r.updates, maps.Clone(x.Properties))
	}
	r.mu.Unlock()
	return r.HubSpot.BatchUpdate(ctx, t, in)
}

func (r *recordingHubSpot) take() []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.updates
	r.updates = nil
	return u
}

// TestInboundChangeNotEchoed: a change applied from HubSpot (sync-sourced, no
// outbound event) must not ride along with the next local edit of another
// field; HubSpot may already hold a newer value of it.
func TestInboundChangeNotEchoed(t *testing.T) {
	t.Parallel()
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := setup(t, options{dialect: d})
			rec := &recordingHubSpot{HubSpot: b.client}
			w := b.worker(t, func(c *outbound.Config) { c.HubSpot = rec })
			ctx := context.Background()
			wl := newWorkload(b, 3)
			id := wl.insert(t, "contacts", map[string]any{"email": "echo@example.com", "first_name": "A", "phone": "1"})
			b.drain(t, w)
			hsID, ok, err := b.links.Lookup(ctx, "hubspot", "contacts", id)
			if err != nil || !ok {
				t.Fatalf("no link after the create: %v", err)
			}
			b.clock.Advance(time.Second)
			if _, err := b.recs.Apply(ctx, apply.Change{EventID: "in-1", Source: "hubspot", ObjectType: "contacts",
				ExternalID: hsID, Kind: store.EventUpdate, Fields: map[string]any{"first_name": "B"}, OccurredAt: b.clock.Now()}); err != nil {
				t.Fatal(err)
			}
			r, err := b.recs.Get(ctx, "contacts", id)
			if err != nil || r.Fields["first_name"] != "B" {
				t.Fatalf("inbound apply: first_name %v, %v", r.Fields["first_name"], err)
			}
			wl.version["contacts"][id] = r.Version
			b.drain(t, w)
			rec.take()
			wl.update(t, "contacts", id, map[string]any{"phone": "2"})
			b.drain(t, w)
			u := rec.take()
			if len(u) != 1 {
				t.Fatalf("%d updates, want 1: %v", len(u), u)
			}
			if got := slices.Sorted(maps.Keys(u[0])); !slices.Equal(got, []string{"phone"}) || u[0]["phone"] != "2" {
				t.Fatalf("the local phone edit sent %v; want phone=2 only (first_name came from HubSpot)", u[0])
			}
		})
	}
}

// TestLinkConflictDeadLetters: two local contacts with one email upsert into
// one HubSpot contact; the second cannot be linked to it. Its events are
// dead-lettered with a message naming both records and the HubSpot id, not
// left leased to be re-claimed forever; the first stays linked, and is
// written over what the second's upsert left on its object.
func TestLinkConflictDeadLetters(t *testing.T) {
	t.Parallel()
	b := setup(t, options{sharedEmails: true})
	w := b.worker(t, nil)
	ctx := context.Background()
	wl := newWorkload(b, 4)
	first := wl.insert(t, "contacts", map[string]any{"email": "same@example.com", "first_name": "First"})
	b.drain(t, w)
	second := wl.insert(t, "contacts", map[string]any{"email": "same@example.com", "first_name": "Second"})
	b.drain(t, w)
	hsID, ok, err := b.links.Lookup(ctx, "hubspot", "contacts", first)
	if err != nil || !ok {
		t.Fatalf("first record not linked: %v", err)
	}
	if got, ok, _ := b.links.Lookup(ctx, "hubspot", "contacts", second); ok {
		t.Fatalf("second record linked to %s", got)
	}
	dl, err := b.st.Outbound().DeadLetters(ctx, store.DeadLetterFilter{Key: "hubspot", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(dl) != 1 || dl[0].RecordID != second {
		t.Fatalf("dead letters %+v; want the second record's event", dl)
	}
	msg := dl[0].ErrorMessage
	for _, want := range []string{"conflict", hsID, "contacts/" + first, "contacts/" + second} {
		if !strings.Contains(msg, want) {
			t.Errorf("dead letter message %q does not name %q", msg, want)
		}
	}
	if c := b.counts(t); c[store.StatusProcessing] != 0 {
		t.Fatalf("%d events still leased", c[store.StatusProcessing])
	}
	// The second's upsert wrote its values over the first's object; the
	// worker wrote the first record over them again.
	if o, _ := b.sim.Object("contacts", hsID); o.Properties["firstname"] != "First" {
		t.Errorf("HubSpot object %s has first name %q after the conflict; want the first record's written back", hsID, o.Properties["firstname"])
	}
	// The first record stays linked to the object, and a local edit of it
	// reaches it.
	wl.update(t, "contacts", first, map[string]any{"first_name": "First again"})
	b.drain(t, w)
	if got, _, _ := b.links.Lookup(ctx, "hubspot", "contacts", first); got != hsID {
		t.Fatalf("first record relinked to %s, want %s", got, hsID)
	}
	// The fix the message asks for: delete the duplicate. It was never linked,
	// so the worker looks its email up in HubSpot, finds the first record's
	// object, and must leave it.
	wl.delete(t, "contacts", second)
	b.drain(t, w)
	if o, ok := b.sim.Object("contacts", hsID); !ok || o.Archived {
		t.Fatalf("deleting the duplicate archived HubSpot object %s of the first record", hsID)
	}
	if c := b.counts(t); c[store.StatusPending]+c[store.StatusProcessing] != 0 {
		t.Fatalf("queue after the duplicate's delete: %v", c)
	}
	b.verify(t, "contacts")
}

// slowClaim is an outbound queue whose claims take claimTime by the injected
// clock: the store stamps the lease when the claim starts.
// With extendErr set, its ExtendLease fails (the database is unreachable), so
// the cycle has only the claim's own lease.
type slowClaim struct {
	store.OutboundRepository
	b         *bundle
	claimTime time.Duration
	extendErr error
}

func (s *slowClaim) ExtendLease(ctx context.Context, d time.Duration, leases ...store.Lease) error {
	if s.extendErr != nil {
		return s.extendErr
	}
	return s.OutboundRepository.ExtendLease(ctx, d, leases...)
}

func (s *slowClaim) Claim(ctx context.Context, p store.ClaimParams) ([]store.OutboundEvent, error) {
	evs, err := s.OutboundRepository.Claim(ctx, p)
	s.b.clock.Advance(s.claimTime)
	return evs, err
}

// slowCalls is a HubSpot whose every call takes callTime by the injected clock.
type slowCalls struct {
	outbound.HubSpot
	b        *bundle
	callTime time.Duration
	mu       sync.Mutex
	calls    int
}

func (s *slowCalls) tick() {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	s.b.clock.Advance(s.callTime)
}

func (s *slowCalls) BatchUpdate(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpdateInput) (*hubspot.BatchResult, error) {
	defer s.tick()
	return s.HubSpot.BatchUpdate(ctx, t, in)
}

func (s *slowCalls) BatchUpsert(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpsertInput) (*hubspot.BatchResult, error) {
	defer s.tick()
	return s.HubSpot.BatchUpsert(ctx, t, in)
}

// TestLeaseCheckLeavesRoomForBookkeeping: with a 10 s lease and a 2 s HTTP
// timeout, a call is made only while the lease leaves room for the call and
// for storing its result (half the HTTP timeout). When the lease cannot be extended (the store fails
// ExtendLease), the claim's own lease (stamped when the claim started) is all
// there is, and the rest of the cycle is released without using an attempt,
// and sent by a later cycle. When it can, the worker extends the lease before
// the call and makes every call, and the lease then covers the call.
func TestLeaseCheckLeavesRoomForBookkeeping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                string
		claimTime, callTime time.Duration
		extendFails         bool
		wantCalls           int
	}{
		// The claim took 7 s: 7 + 2 (call) + 1 (margin) is not before 10.
		{"slow claim", 7 * time.Second, 0, true, 0},
		// The first call took 7 s: 7 + 2 + 1 is not before 10, so the second
		// call (another operation) is released.
		{"slow first call", 0, 7 * time.Second, true, 1},
		// The same with a store that extends leases: both calls are made.
		{"slow claim, extended", 7 * time.Second, 0, false, 2},
		{"slow first call, extended", 0, 7 * time.Second, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, options{})
			ctx := context.Background()
			wl := newWorkload(b, 5)
			known := wl.insert(t, "contacts", map[string]any{"email": "known@example.com", "phone": "1"})
			b.drain(t, b.worker(t, nil))
			wl.update(t, "contacts", known, map[string]any{"phone": "2"})                      // an update by id
			wl.insert(t, "contacts", map[string]any{"email": "new@example.com", "phone": "3"}) // an upsert
			hs := &slowCalls{HubSpot: b.client, b: b, callTime: tc.callTime}
			repo := &slowClaim{OutboundRepository: b.st.Outbound(), b: b, claimTime: tc.claimTime}
			if tc.extendFails {
				repo.extendErr = errors.New("database unreachable")
			}
			w := b.worker(t, func(c *outbound.Config) {
				c.Store = repo
				c.HubSpot = hs
				c.LeaseDuration = 10 * time.Second
				c.HTTPTimeout = 2 * time.Second
			})
			s, err := w.RunOnce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if hs.calls != tc.wantCalls || (s.Released == 0) != (tc.wantCalls == 2) {
				t.Fatalf("%d calls, %d released; want %d calls and the rest released (%+v)", hs.calls, s.Released, tc.wantCalls, s)
			}
			if s.Retried != 0 || s.Failed != 0 {
				t.Fatalf("released events used attempts: %+v", s)
			}
			b.drain(t, b.worker(t, nil))
			b.verify(t, "contacts")
		})
	}
}
