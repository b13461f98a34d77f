package server

import (
	"context"
	"time"
)

// periodic is the loop of the server's scheduled jobs (the cleaner, the drift
// scan): fn runs every interval, and at once too with first, until stop closes
// or ctx ends. fn's context is cancelled when stop closes, so a long run stops
// between its own steps.
func periodic(ctx context.Context, stop <-chan struct{}, interval time.Duration, first bool, fn func(context.Context)) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(interval)
	defer t.Stop()
	if first {
		fn(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fn(ctx)
	}
}
