package server

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

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

	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// Start launches the loop and returns at once.
func (c *cleaner) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return nil
	}
	c.started = true
	ctx, c.cancel = context.WithCancel(ctx)
	c.done = make(chan struct{})
	go c.run(ctx)
	return nil
}

func (c *cleaner) run(ctx context.Context) {
	defer close(c.done)
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		res, err := ops.Cleanup(ctx, c.st, c.cfg)
		switch {
		case err != nil && !errors.Is(err, context.Canceled):
			c.log.Error("cleanup failed", "err", err)
		case err == nil && res.Inbound+res.Outbound+res.Internal > 0:
			c.log.Info("cleanup: deleted processed events", "inbound", res.Inbound, "outbound", res.Outbound, "internal", res.Internal)
		}
		if c.ran != nil {
			c.ran(res, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Stop cancels the loop (a cleanup in progress stops between batches: what was
// deleted stays deleted, the rest waits for the next run) and waits for it.
func (c *cleaner) Stop(ctx context.Context) error {
	c.mu.Lock()
	cancel, done := c.cancel, c.done
	c.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
