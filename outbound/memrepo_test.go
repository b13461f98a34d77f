package outbound_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hubsync/hubsync/store"
)

// memRepo is an in-memory outbound queue that follows the claim contract the
// worker was designed for: a claim hands out ALL due events of each record it
// takes, together and in creation order, and never a record another claim
// holds. (The SQL stores currently hand out only a record's head event per
// claim, which leaves nothing to coalesce; see the package doc.) Only what the
// worker calls is implemented.
type memRepo struct {
	store.OutboundRepository // unimplemented methods panic
	mu                       sync.Mutex
	now                      func() time.Time
	evs                      []*store.OutboundEvent
	seq                      int
}

func newMemRepo(now func() time.Time) *memRepo { return &memRepo{now: now} }

func (m *memRepo) Enqueue(_ context.Context, ev store.OutboundEvent) (store.EnqueueResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	ev.ID = fmt.Sprintf("ev%06d", m.seq)
	ev.Status, ev.CreatedDate, ev.NextAttemptDate = store.StatusPending, m.now(), m.now()
	m.evs = append(m.evs, &ev)
	return store.EnqueueResult{ID: ev.ID, Inserted: true}, nil
}

func (m *memRepo) Claim(_ context.Context, p store.ClaimParams) ([]store.OutboundEvent, error) {
	p = p.WithDefaults()
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	held := map[[2]string]bool{}
	for _, e := range m.evs {
		if e.Status == store.StatusProcessing && e.LeaseExpiresDate.After(now) {
			held[[2]string{e.ObjectType, e.RecordID}] = true
		}
	}
	// Take records in the order of their first due event, each with all its
	// due events, while they fit in the limit.
	blocked := map[[2]string]bool{}
	byRecord := map[[2]string][]*store.OutboundEvent{}
	var order [][2]string
	for _, e := range m.evs {
		k := [2]string{e.ObjectType, e.RecordID}
		due := (e.Status == store.StatusPending && !e.NextAttemptDate.After(now)) ||
			(e.Status == store.StatusProcessing && !e.LeaseExpiresDate.After(now))
		if e.Status == store.StatusPending && !due {
			blocked[k] = true // a later event must not overtake it
		}
		if !due || held[k] || blocked[k] || e.Destination != p.Key {
			continue
		}
		if byRecord[k] == nil {
			order = append(order, k)
		}
		byRecord[k] = append(byRecord[k], e)
	}
	var out []store.OutboundEvent
	exp := now.Add(p.LeaseDuration)
	for _, k := range order {
		evs := byRecord[k]
		if len(out) > 0 && len(out)+len(evs) > p.Limit {
			break
		}
		for _, e := range evs[:min(len(evs), p.Limit)] {
			e.Status, e.Attempt, e.LeaseOwner, e.LeaseExpiresDate = store.StatusProcessing, e.Attempt+1, p.Owner, &exp
			out = append(out, *e)
		}
	}
	return out, nil
}

func (m *memRepo) find(l store.Lease) *store.OutboundEvent {
	for _, e := range m.evs {
		if e.ID == l.ID && e.Attempt == l.Attempt && e.Status == store.StatusProcessing {
			return e
		}
	}
	return nil
}

func (m *memRepo) settle(leases []store.Lease, f func(*store.OutboundEvent)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var lost []store.Lease
	for _, l := range leases {
		if e := m.find(l); e != nil {
			f(e)
		} else {
			lost = append(lost, l)
		}
	}
	if len(lost) > 0 {
		return &store.LeaseLostError{Leases: lost}
	}
	return nil
}

func (m *memRepo) Complete(_ context.Context, leases ...store.Lease) error {
	return m.settle(leases, func(e *store.OutboundEvent) { e.Status = store.StatusProcessed })
}

func (m *memRepo) Fail(_ context.Context, l store.Lease, msg string) error {
	return m.settle([]store.Lease{l}, func(e *store.OutboundEvent) { e.Status, e.ErrorMessage = store.StatusFailed, msg })
}

func (m *memRepo) IncrementRetry(_ context.Context, l store.Lease, msg string, minDelay time.Duration) (store.RetryResult, error) {
	var r store.RetryResult
	err := m.settle([]store.Lease{l}, func(e *store.OutboundEvent) {
		e.RetryCount++
		e.Status, e.ErrorMessage, e.NextAttemptDate = store.StatusPending, msg, m.now().Add(max(minDelay, time.Second))
		r.NextAttemptDate = e.NextAttemptDate
	})
	return r, err
}

func (m *memRepo) Release(_ context.Context, delay time.Duration, leases ...store.Lease) error {
	return m.settle(leases, func(e *store.OutboundEvent) {
		e.Status, e.NextAttemptDate = store.StatusPending, m.now().Add(delay)
	})
}

func (m *memRepo) unfinished() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.evs {
		if e.Status == store.StatusPending || e.Status == store.StatusProcessing {
			n++
		}
	}
	return n
}

func (m *memRepo) processed() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, e := range m.evs {
		if e.Status == store.StatusProcessed {
			n++
		}
	}
	return n
}

// ExtendLease follows the store contract: held leases run to at least now+d,
// finished events are left alone, and events claimed again are lost.
func (m *memRepo) ExtendLease(_ context.Context, d time.Duration, leases ...store.Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	until := m.now().Add(d)
	var lost []store.Lease
	for _, l := range leases {
		for _, e := range m.evs {
			switch {
			case e.ID != l.ID:
			case e.Attempt != l.Attempt:
				lost = append(lost, l)
			case e.Status == store.StatusProcessing && e.LeaseExpiresDate.Before(until):
				e.LeaseExpiresDate = &until
			}
		}
	}
	if len(lost) > 0 {
		return &store.LeaseLostError{Leases: lost}
	}
	return nil
}
