// Package leasekeep keeps a claim's leases alive while its work runs: a
// heartbeat extends them every third of the lease, so a claim can be short
// (a crashed worker's events are claimable again soon) and still cover a long
// cycle. Before each step that must finish under the lease (a HubSpot call and
// the storing of its result), the worker asks Ensure for the time it needs;
// Ensure extends the lease at once when the heartbeat's margin is too small.
package leasekeep

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/hubsync/hubsync/store"
)

// Extender is the store operation the keeper calls: store.LeaseOps.ExtendLease.
type Extender interface {
	ExtendLease(ctx context.Context, d time.Duration, leases ...store.Lease) error
}

// extendTimeout bounds one heartbeat's store call.
const extendTimeout = 10 * time.Second

// Keeper holds one claim's leases. Its zero value is not usable; call Start.
type Keeper struct {
	ext    Extender
	leases []store.Lease
	d      time.Duration
	now    func() time.Time
	logger *slog.Logger

	mu     sync.Mutex
	expiry time.Time // no later than every lease's expiry in the store
	lost   bool      // a lease was claimed again by another worker

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Config describes a claim to keep.
type Config struct {
	// Leases are the claim's leases.
	Leases []store.Lease
	// Duration is the lease length each heartbeat grants; heartbeats run every
	// Duration/3.
	Duration time.Duration
	// Expiry is the claim's own (earliest) expiry.
	Expiry time.Time
	// Now is the worker's clock; it should be the store's.
	Now func() time.Time
	// Logger logs failed heartbeats.
	Logger *slog.Logger
}

// Start begins heartbeats for cfg.Leases; Stop ends them. ctx's values are
// kept but not its cancellation: the worker's bookkeeping after a cancelled
// call still runs under the lease, until Stop.
func Start(ctx context.Context, ext Extender, cfg Config) *Keeper {
	k := &Keeper{
		ext: ext, leases: cfg.Leases, d: cfg.Duration, now: cfg.Now, logger: cfg.Logger,
		expiry: cfg.Expiry, stop: make(chan struct{}), done: make(chan struct{}),
	}
	if k.logger == nil {
		k.logger = slog.Default()
	}
	ctx = context.WithoutCancel(ctx)
	go k.run(ctx)
	return k
}

func (k *Keeper) run(ctx context.Context) {
	defer close(k.done)
	interval := max(k.d/3, time.Millisecond)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
		}
		if err := k.extend(ctx, k.d); err != nil && !errors.Is(err, store.ErrLeaseLost) {
			k.logger.WarnContext(ctx, "lease heartbeat failed", "leases", len(k.leases), "error", err)
		}
		if k.Lost() {
			return
		}
	}
}

// extend asks the store for d more from now and records the new expiry, as
// seen from before the call (so never later than the store's).
func (k *Keeper) extend(ctx context.Context, d time.Duration) error {
	until := k.now().Add(d)
	ctx, cancel := context.WithTimeout(ctx, extendTimeout)
	defer cancel()
	err := k.ext.ExtendLease(ctx, d, k.leases...)
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case err == nil:
		if until.After(k.expiry) {
			k.expiry = until
		}
	case errors.Is(err, store.ErrLeaseLost):
		k.lost = true
	}
	return err
}

// Expiry is the earliest time any of the claim's leases may end, as far as
// the keeper knows.
func (k *Keeper) Expiry() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.expiry
}

// Lost reports whether a heartbeat found one of the leases claimed again.
func (k *Keeper) Lost() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lost
}

// Ensure reports whether every lease holds for at least need from now,
// extending them first when the heartbeat's margin is smaller. It is false
// when a lease was lost or the store could not extend: the caller must not
// start work that could outlive the lease.
func (k *Keeper) Ensure(ctx context.Context, need time.Duration) bool {
	if k.Lost() {
		return false
	}
	if k.now().Add(need).Before(k.Expiry()) {
		return true
	}
	// A second of slack, so that the time the extension itself takes does
	// not leave it short.
	if err := k.extend(context.WithoutCancel(ctx), need+time.Second); err != nil {
		return false
	}
	return !k.Lost() && k.now().Add(need).Before(k.Expiry())
}

// Stop ends the heartbeats and waits for the one in progress, if any.
func (k *Keeper) Stop() {
	k.once.Do(func() { close(k.stop) })
	<-k.done
}
