// Package service is the base every background service of hubsync shares:
// its logger, its clock and its owner id (the name it leases rows under),
// with the defaults filled the same way everywhere.
package service

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// Base is the logger, clock and owner id of one service. Each service keeps
// the three as fields of its public Config and builds its Base from them with
// NewBase.
type Base struct {
	// Logger receives the service's logs.
	Logger *slog.Logger
	// Now is the service's clock; pass the store's, so lease arithmetic agrees.
	Now func() time.Time
	// Owner names the service in lease rows.
	Owner string
}

// NewBase fills the zero fields of b: Logger slog.Default(), Now time.Now,
// Owner OwnerDefault(component).
func NewBase(component string, b Base) Base {
	if b.Logger == nil {
		b.Logger = slog.Default()
	}
	if b.Now == nil {
		b.Now = time.Now
	}
	if b.Owner == "" {
		b.Owner = OwnerDefault(component)
	}
	return b
}

// OwnerDefault is "host/pid/component-random": unique per service instance,
// and readable in a lease row (which host, which process, which loop).
func OwnerDefault(component string) string {
	r := make([]byte, 4)
	_, _ = rand.Read(r)
	return OwnerPrefix(os.Getpid()) + component + "-" + hex.EncodeToString(r)
}

// OwnerPrefix is how OwnerDefault starts for every service of process pid on
// this host, "host/pid/": `hubsync chaos` finds a killed replica's leases by it.
func OwnerPrefix(pid int) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/", cmp.Or(host, "host"), pid)
}

// Idle waits between a service's cycles: d, or less when notify fires (new
// work). It reports false when stop closed or ctx ended, and the loop must
// return.
func Idle(ctx context.Context, stop, notify <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
		return false
	case <-ctx.Done():
		return false
	case <-notify:
	case <-t.C:
	}
	return true
}
