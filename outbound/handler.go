package outbound

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hubsync/hubsync/store"
)

// Handler pushes the outbound events of one ObjectType that are not records
// of the field mapping, e.g. subscription requests (package subscriptions).
// Config.Handlers routes events to it by ObjectType; the worker claims,
// fences, budgets and settles them as it does records, so a second kind of
// event needs no special case elsewhere.
type Handler interface {
	// Push pushes the claimed events of one record (one ObjectType and
	// RecordID, in queue order) and returns one Outcome per event, in the
	// same order. Every HubSpot call must be reserved through calls first.
	Push(ctx context.Context, evs []store.OutboundEvent, calls Calls) []Outcome
}

// DeadLetterer is implemented by Handlers that must learn when an event they
// asked to retry ran out of attempts and became a dead letter.
type DeadLetterer interface {
	DeadLettered(ctx context.Context, ev store.OutboundEvent, reason string)
}

// Calls reserves n HubSpot calls from the worker's shared budget. When the
// budget has no room, granted is false and retryAfter says when it will: the
// Handler then returns ActionRelease with that delay.
type Calls func(ctx context.Context, n int) (granted bool, retryAfter time.Duration, err error)

// Action is what becomes of an event a Handler pushed.
type Action int

// The Actions of an Outcome.
const (
	// ActionComplete: done (pushed, or nothing to push).
	ActionComplete Action = iota
	// ActionSuperseded: done without a call, because a newer change of the
	// record already reached HubSpot.
	ActionSuperseded
	// ActionRetry: a failed attempt; tried again after Delay at the earliest,
	// a dead letter after the store's MaxAttempts.
	ActionRetry
	// ActionFail: a dead letter at once, with Reason.
	ActionFail
	// ActionRelease: returned unchanged (no attempt used) for Delay, e.g. no budget.
	ActionRelease
)

// Outcome is what a Handler did with one event.
type Outcome struct {
	Action Action
	// Reason is the error message of ActionRetry and ActionFail.
	Reason string
	// Delay is the minimum wait of ActionRetry and ActionRelease.
	Delay time.Duration
	// Calls is how many HubSpot calls the event cost (for the Summary).
	Calls int
	// BudgetDenied marks an ActionRelease caused by the budget.
	BudgetDenied bool
}

// handOff gives the events of object types with a Handler to their handler,
// one record at a time, and returns the others.
func (c *cycle) handOff(evs []store.OutboundEvent) []store.OutboundEvent {
	hs := c.w.cfg.Handlers
	if len(hs) == 0 {
		return evs
	}
	type key struct{ objectType, recordID string }
	var rest []store.OutboundEvent
	var order []key
	groups := map[key][]store.OutboundEvent{}
	for _, e := range evs {
		if _, ok := hs[e.ObjectType]; !ok {
			rest = append(rest, e)
			continue
		}
		k := key{e.ObjectType, e.RecordID}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], e)
	}
	calls := func(ctx context.Context, n int) (bool, time.Duration, error) {
		res, err := c.w.cfg.Budget.Reserve(ctx, c.w.cfg.BudgetKey, n)
		if err != nil {
			return false, 0, err
		}
		return res.Granted, res.RetryAfter, nil
	}
	for _, k := range order {
		group := groups[k]
		c.sum.Records++
		cfg := c.w.cfg
		if c.ctx.Err() != nil || !c.keep.Ensure(c.ctx, cfg.callLease()) {
			// Cancelled, or too little lease left for a call and its bookkeeping.
			c.releaseEvents(group, 0)
			continue
		}
		// The handler's reads and call share one call's deadline, so that its
		// call is answered under the lease whatever its client's timeout.
		ctx, cancel := c.callCtx(c.ctx)
		outs := hs[k.objectType].Push(ctx, group, calls)
		cancel()
		if len(outs) != len(group) {
			c.errs = append(c.errs, fmt.Errorf("outbound: handler of %s returned %d outcomes for %d events", k.objectType, len(outs), len(group)))
			c.releaseEvents(group, 0)
			continue
		}
		for i, e := range group {
			c.settleOutcome(hs[k.objectType], e, outs[i])
		}
	}
	return rest
}

// settleOutcome records what a Handler did with one event, fenced by its lease.
func (c *cycle) settleOutcome(h Handler, e store.OutboundEvent, o Outcome) {
	m := c.w.cfg.Metrics
	c.sum.Calls += o.Calls
	ctx, cancel := c.storeCtx()
	defer cancel()
	var err error
	switch o.Action {
	case ActionComplete, ActionSuperseded:
		if err = c.w.cfg.Store.Complete(ctx, e.Lease()); err == nil {
			c.sum.Completed++
			m.add(&m.completed, 1)
			if o.Calls == 0 {
				c.sum.Skipped++
				m.add(&m.skipped, 1)
			}
			if o.Action == ActionSuperseded {
				c.sum.Superseded++
				m.add(&m.superseded, 1)
			}
		}
	case ActionRetry:
		var res store.RetryResult
		if res, err = c.w.cfg.Store.IncrementRetry(ctx, e.Lease(), o.Reason, o.Delay); err == nil {
			if res.Dead {
				c.sum.Failed++
				m.add(&m.dead, 1)
				if d, ok := h.(DeadLetterer); ok {
					d.DeadLettered(ctx, e, o.Reason)
				}
			} else {
				c.sum.Retried++
				m.add(&m.retried, 1)
			}
		}
	case ActionFail:
		if err = c.w.cfg.Store.Fail(ctx, e.Lease(), o.Reason); err == nil {
			c.sum.Failed++
			m.add(&m.failed, 1)
		}
	case ActionRelease:
		c.releaseEvents([]store.OutboundEvent{e}, o.Delay)
		if o.BudgetDenied {
			c.sum.BudgetRetryAfter = max(c.sum.BudgetRetryAfter, max(o.Delay, time.Millisecond))
		}
	}
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		m.add(&m.leaseLost, 1)
	case err != nil:
		c.errs = append(c.errs, fmt.Errorf("outbound: settle %s: %w", e.ID, err))
	}
}
