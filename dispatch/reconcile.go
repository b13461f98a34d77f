package dispatch

import (
	"context"
	"time"

	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/store"
)

// Rescheduler is the reconciliation sweep's repair in qstash mode
// (ops.Scheduler): it releases expired leases (as poll mode does) and gives
// every outbound candidate of its destination that was published at least
// the sweep's age ago and is still unfinished a new publish generation,
// which the publisher then publishes under a new deduplication id.
type Rescheduler struct {
	// Destination is the outbound queue key the publisher serves.
	Destination string
	// Wake is called after candidates were scheduled (the publisher's Notify).
	Wake func()
	// Metrics counts the re-publishes; optional.
	Metrics *Metrics
}

var _ ops.Scheduler = Rescheduler{}

// Schedule implements ops.Scheduler.
func (r Rescheduler) Schedule(ctx context.Context, st store.Store, now time.Time, olderThan time.Duration, cands []ops.ReconcileCandidate) error {
	if err := ops.ReleaseExpired(ctx, st, cands); err != nil {
		return err
	}
	ps, err := newPubStore(st)
	if err != nil {
		return err
	}
	cutoff := now.Add(-olderThan)
	n := 0
	for i := range cands {
		c := &cands[i]
		if c.Direction != store.DirectionOutbound || c.Key != r.Destination {
			continue
		}
		// A released lease was a delivery that died: publish again whatever
		// its age; otherwise only what has waited olderThan since its publish.
		at := cutoff
		if c.Reason == ops.ReasonExpiredLease && c.Scheduled {
			at = now
		}
		ok, err := ps.republish(ctx, c.ID, at)
		if err != nil {
			return err
		}
		if ok {
			c.Scheduled = true
			n++
		}
	}
	if n > 0 {
		if r.Metrics != nil {
			r.Metrics.republished.Add(int64(n))
		}
		if r.Wake != nil {
			r.Wake()
		}
	}
	return nil
}
