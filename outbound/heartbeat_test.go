package outbound_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/store"
)

// heartbeatRepo counts the heartbeats that reached the store; once dead is
// set, every heartbeat fails, as they do for a replica that was killed.
type heartbeatRepo struct {
	store.OutboundRepository
	extended atomic.Int64
	dead     atomic.Bool
}

func (r *heartbeatRepo) ExtendLease(ctx context.Context, d time.Duration, leases ...store.Lease) error {
	if r.dead.Load() {
		return errors.New("replica killed")
	}
	err := r.OutboundRepository.ExtendLease(ctx, d, leases...)
	if err == nil {
		r.extended.Add(1)
	}
	return err
}

// blockingCalls is a HubSpot whose upserts wait for release and then answer
// whatever the call's deadline: the call lasts as long as the test steps the
// injected clock, while the deadline runs on the real one.
type blockingCalls struct {
	outbound.HubSpot
	entered chan struct{}
	release chan struct{}
}

func (h *blockingCalls) BatchUpsert(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpsertInput) (*hubspot.BatchResult, error) {
	h.entered <- struct{}{}
	<-h.release
	return h.HubSpot.BatchUpsert(context.WithoutCancel(ctx), t, in)
}

// TestHeartbeat: with a 1 s lease, a cycle whose HubSpot call lasts many
// leases keeps its events while its heartbeats reach the store, and loses
// them to another claimer once they stop (the replica was killed).
func TestHeartbeat(t *testing.T) {
	t.Parallel()
	for _, killed := range []bool{false, true} {
		name := map[bool]string{false: "live", true: "killed"}[killed]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, options{})
			ctx := context.Background()
			wl := newWorkload(b, 5)
			wl.insert(t, "contacts", map[string]any{"email": "long@example.com", "phone": "1"})
			repo := &heartbeatRepo{OutboundRepository: b.st.Outbound()}
			hs := &blockingCalls{HubSpot: b.client, entered: make(chan struct{}, 1), release: make(chan struct{})}
			w := b.worker(t, func(c *outbound.Config) {
				c.Store = repo
				c.HubSpot = hs
				c.LeaseDuration = time.Second
			})
			type result struct {
				s   outbound.Summary
				err error
			}
			done := make(chan result, 1)
			go func() {
				s, err := w.RunOnce(ctx)
				done <- result{s, err}
			}()
			testwait.Recv(t, "the cycle's call", hs.entered)

			// Before the call the worker extended the lease to cover it (2 s
			// HTTP timeout + 1 s margin); step the clock well past that.
			if killed {
				repo.dead.Store(true)
				b.clock.Advance(6 * time.Second)
			} else {
				for range 8 {
					n := repo.extended.Load()
					testwait.For(t, "a heartbeat", func() bool { return repo.extended.Load() > n })
					b.clock.Advance(900 * time.Millisecond)
				}
			}
			stolen, err := b.st.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot", Owner: "other-replica", LeaseDuration: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			close(hs.release)
			res := testwait.Recv(t, "the cycle's end", done)
			if killed {
				if len(stolen) != 1 {
					t.Fatalf("another replica claimed %d events after the killed one's lease ran out, want 1", len(stolen))
				}
				got, err := b.st.Outbound().Get(ctx, stolen[0].ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Status != store.StatusProcessing || got.LeaseOwner != "other-replica" {
					t.Fatalf("after the killed cycle ended, the event is %s owned by %q; want it still processing under the other replica", got.Status, got.LeaseOwner)
				}
				return
			}
			if len(stolen) != 0 {
				t.Fatalf("another replica claimed %v while the live cycle's heartbeats held the lease", stolen)
			}
			if res.err != nil || res.s.Completed != 1 {
				t.Fatalf("live cycle: %+v, err %v; want its one event completed", res.s, res.err)
			}
			b.verify(t, "contacts")
		})
	}
}
