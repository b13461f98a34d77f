package inbound

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// stealingApplier lets another worker take the claim over (the lease expires
// and w2 claims) just before it applies, as a replica that stalled mid-cycle.
type stealingApplier struct {
	inner apply.FencedApplier
	once  sync.Once
	steal func()
}

func (a *stealingApplier) Apply(ctx context.Context, ch apply.Change) (apply.Result, error) {
	return a.ApplyFenced(ctx, ch, nil)
}

func (a *stealingApplier) ApplyFenced(ctx context.Context, ch apply.Change, fence apply.Fence) (apply.Result, error) {
	a.once.Do(a.steal)
	return a.inner.ApplyFenced(ctx, ch, fence)
}

// TestWorkerFencedApply: the SyncWorker applies and completes an event in one
// transaction that first checks its lease. A worker whose lease expired and was
// claimed by another changes nothing (lease_lost, no record); the new owner
// applies it once and completes it.
func TestWorkerFencedApply(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setupDialect(t, d, store.RetryPolicy{NoJitter: true, MaxAttempts: 3})
		recs, err := records.New(b.store, nil, records.Config{})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		b.deliverEvents(t, whEvent("contact.propertyChange", 1, t0, prop("firstname", "Once")))
		var stolen []store.InboundEvent
		steal := &stealingApplier{inner: recs, steal: func() {
			b.clock.Advance(time.Minute + time.Second)
			var err error
			stolen, err = b.store.Inbound().Claim(ctx, store.ClaimParams{Key: "hubspot", Owner: "w2", LeaseDuration: time.Minute})
			if err != nil || len(stolen) != 1 {
				t.Errorf("w2's claim after w1's lease expired: %v, %d events", err, len(stolen))
			}
		}}
		var mu sync.Mutex
		outcomes := map[string]int{}
		w1 := b.newWorker(t, &fakeReader{}, "w1", func(c *WorkerConfig) {
			c.Applier = steal
			c.Hooks.OnOutcome = func(o, _ string) { mu.Lock(); outcomes[o]++; mu.Unlock() }
		})
		if n, err := w1.RunOnce(ctx); n != 1 || err != nil {
			t.Fatalf("w1 RunOnce = %d, %v", n, err)
		}
		if outcomes[OutcomeLeaseLost] != 1 || outcomes[OutcomeApplied] != 0 {
			t.Fatalf("w1's outcomes = %v; want one lease_lost and nothing applied", outcomes)
		}
		var n int
		if err := b.db.QueryRow("SELECT COUNT(*) FROM hubsync_record").Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d records (%v) after the apply of a worker that lost its lease; want 0", n, err)
		}
		if len(stolen) != 1 {
			t.FailNow()
		}
		ev, err := b.store.Inbound().Get(ctx, stolen[0].ID)
		if err != nil || ev.Status != store.StatusProcessing || ev.LeaseOwner != "w2" || ev.Attempt != stolen[0].Attempt {
			t.Fatalf("event after w1's fenced apply = %+v, %v; want processing under w2", ev, err)
		}
		// w2 applies it (its lease holds) and completes it in the same transaction.
		res, err := recs.ApplyFenced(outbox.WithSyncSource(ctx, "hubspot"), apply.Change{
			EventID: ev.ID, Source: "hubspot", ObjectType: "contacts", ExternalID: "1", Kind: store.EventUpdate,
			Fields: map[string]any{"first_name": "Once"}, OccurredAt: time.UnixMilli(t0),
		}, func(ctx context.Context, tx store.DBTX) error {
			return b.store.Inbound().CompleteTx(ctx, tx, ev.Lease())
		})
		if err != nil || res.Outcome != apply.Created {
			t.Fatalf("w2's fenced apply = %+v, %v", res, err)
		}
		if got := b.statusCounts(t); got["processed"] != 1 {
			t.Fatalf("statuses after w2's fenced apply: %v; want processed", got)
		}
	})
}

// TestWorkerFencedApplyCompletes: with a FencedApplier, a normal cycle
// applies and completes each event.
func TestWorkerFencedApplyCompletes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	recs, err := records.New(b.store, nil, records.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b.deliverEvents(t,
		whEvent("contact.propertyChange", 1, t0, prop("firstname", "A")),
		whEvent("contact.propertyChange", 2, t0, prop("firstname", "B")))
	// Neither object is linked yet: the worker reads each whole object.
	reader := &fakeReader{objects: map[string]hubspot.Object{
		"1": {ID: "1", Properties: map[string]string{"firstname": "A"}},
		"2": {ID: "2", Properties: map[string]string{"firstname": "B"}},
	}}
	w := b.newWorker(t, reader, "w1", func(c *WorkerConfig) { c.Applier = recs })
	if n := drain(t, w); n != 2 {
		t.Fatalf("drained %d events, want 2", n)
	}
	if got := b.statusCounts(t); got["processed"] != 2 {
		t.Fatalf("statuses %v; want 2 processed", got)
	}
	var n int
	if err := b.db.QueryRow("SELECT COUNT(*) FROM hubsync_record").Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d records, %v; want 2", n, err)
	}
}

// unfenceable is a FencedApplier whose store has no SQL transaction.
type unfenceable struct {
	*memApplier
	fencedCalls atomic.Int64
}

func (u *unfenceable) ApplyFenced(context.Context, apply.Change, apply.Fence) (apply.Result, error) {
	u.fencedCalls.Add(1)
	return apply.Result{}, fmt.Errorf("wrapped: %w", apply.ErrFenceUnsupported)
}

// TestWorkerUnfenceableApplierFallsBack: an Applier that cannot run the fence
// is asked once, then applied unfenced and completed afterwards, as before.
func TestWorkerUnfenceableApplierFallsBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	u := &unfenceable{memApplier: b.applier}
	b.deliverEvents(t,
		whEvent("contact.propertyChange", 1, t0, prop("firstname", "A")),
		whEvent("contact.propertyChange", 2, t0, prop("firstname", "B")))
	w := b.newWorker(t, &fakeReader{}, "w", func(c *WorkerConfig) { c.Applier = u })
	drain(t, w)
	if got := b.statusCounts(t); got["processed"] != 2 {
		t.Fatalf("statuses %v; want 2 processed", got)
	}
	if n := u.fencedCalls.Load(); n != 1 {
		t.Fatalf("ApplyFenced called %d times; want once, then the fallback", n)
	}
	if rec, ok := b.applier.record("contacts", "2"); !ok || rec.Fields["first_name"] != "B" {
		t.Fatalf("record %+v", rec)
	}
}
