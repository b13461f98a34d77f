package inbound

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/store"
)

// heartbeatInbound counts the heartbeats that reached the store; once dead
// is set every heartbeat fails, as a killed replica's do.
type heartbeatInbound struct {
	store.InboundRepository
	extended atomic.Int64
	dead     atomic.Bool
}

func (r *heartbeatInbound) ExtendLease(ctx context.Context, d time.Duration, leases ...store.Lease) error {
	if r.dead.Load() {
		return errors.New("replica killed")
	}
	err := r.InboundRepository.ExtendLease(ctx, d, leases...)
	if err == nil {
		r.extended.Add(1)
	}
	return err
}

// blockingReader is an ObjectReader whose reads wait for release.
type blockingReader struct {
	*fakeReader
	entered chan struct{}
	release chan struct{}
}

func (r *blockingReader) BatchRead(ctx context.Context, t hubspot.ObjectType, ids []string, props []string, idProp string) (*hubspot.BatchResult, error) {
	r.entered <- struct{}{}
	<-r.release
	return r.fakeReader.BatchRead(ctx, t, ids, props, idProp)
}

// TestHeartbeat: with a 1 s lease, a cycle whose BatchRead lasts many leases
// keeps its event while its heartbeats reach the store, and loses it to
// another claimer once they stop (the replica was killed).
func TestHeartbeat(t *testing.T) {
	t.Parallel()
	for _, killed := range []bool{false, true} {
		t.Run(map[bool]string{false: "live", true: "killed"}[killed], func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			reader := &blockingReader{
				fakeReader: &fakeReader{objects: map[string]hubspot.Object{"1": contactObj("1", "ada@example.com", "Ada", time.UnixMilli(t0))}},
				entered:    make(chan struct{}, 1), release: make(chan struct{}),
			}
			repo := &heartbeatInbound{InboundRepository: b.store.Inbound()}
			w := b.newWorker(t, reader, "w1", func(c *WorkerConfig) { c.Store = repo; c.LeaseDuration = time.Second })
			b.deliverEvents(t, whEvent("contact.creation", 1, t0))
			done := make(chan error, 1)
			go func() {
				_, err := w.RunOnce(ctx)
				done <- err
			}()
			testwait.Recv(t, "the cycle's BatchRead", reader.entered)
			if killed {
				repo.dead.Store(true)
				b.clock.Advance(2 * time.Second)
			} else {
				for range 4 {
					n := repo.extended.Load()
					testwait.For(t, "a heartbeat", func() bool { return repo.extended.Load() > n })
					b.clock.Advance(900 * time.Millisecond)
				}
			}
			stolen, err := b.store.Inbound().Claim(ctx, store.ClaimParams{Key: "hubspot", Owner: "other-replica", LeaseDuration: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			close(reader.release)
			err = testwait.Recv(t, "the cycle's end", done)
			if killed {
				if len(stolen) != 1 {
					t.Fatalf("another replica claimed %d events after the killed one's lease ran out, want 1", len(stolen))
				}
				got, err := b.store.Inbound().Get(ctx, stolen[0].ID)
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
			if err != nil {
				t.Fatal(err)
			}
			if got := b.statusCounts(t); got["processed"] != 1 {
				t.Fatalf("statuses %v, want the event processed", got)
			}
		})
	}
}
