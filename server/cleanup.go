package server

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/hubsync/hubsync/internal/startstop"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/store"
)

// cleaner runs Cleanup at start and then every interval. Several replicas may
// run it at once: deleting processed rows in batches is idempotent.
type cleaner struct {
	st       store.Store
	cfg      ops.CleanupConfig
	interval time.Duration
	log      *slog.Logger
	// ran, when set, is called after each run (tests).
	ran func(ops.CleanupResult, error)

	svc startstop.Service
}

// Start launches the loop and returns at once; ErrStarted when it runs
// already, ErrStopped after Stop.
func (c *cleaner) Start(ctx context.Context) error { return c.svc.Start(ctx, c.run) }

// Stop stops the loop and waits for it. A cleanup in progress stops between
// batches even on a graceful stop, since it may run long: what was deleted
// stays deleted, the rest waits for the next run. Stop is idempotent.
func (c *cleaner) Stop(ctx context.Context) error { return c.svc.Stop(ctx) }

func (c *cleaner) run(ctx context.Context, stop <-chan struct{}) {
	periodic(ctx, stop, c.interval, true, func(ctx context.Context) {
		res, err := ops.Cleanup(ctx, c.st, c.cfg)
		switch {
		case err != nil && !errors.Is(err, context.Canceled):
			c.log.Error("cleanup failed", "err", err)
		case err == nil && res.Inbound+res.Outbound+res.Internal+res.Rejected+res.IdempotencyKeys+res.SubscriptionRequests+res.Discarded > 0:
			c.log.Info("cleanup: deleted processed events", "inbound", res.Inbound, "outbound", res.Outbound, "internal", res.Internal, "rejected", res.Rejected,
				"idempotency_keys", res.IdempotencyKeys, "subscription_requests", res.SubscriptionRequests, "discarded", res.Discarded)
		}
		if c.ran != nil {
			c.ran(res, err)
		}
	})
}
