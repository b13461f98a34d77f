package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hubsync/hubsync/store"
)

// meteredStore wraps a store.Store and counts, per queue and exact
// Source/Destination, what this process enqueues, claims, completes, retries and
// dead-letters. Wrapping the store (rather than asking every worker for hooks)
// counts the same way whichever worker does the work.
type meteredStore struct {
	store.Store
	in       *instruments
	inbound  *meteredInbound
	outbound *meteredOutbound
	internal *meteredInternal
}

// Unwrap returns the wrapped store, for code that needs a backend's own type.
func (s *meteredStore) Unwrap() store.Store { return s.Store }

func newMeteredStore(st store.Store, in *instruments) *meteredStore {
	ms := &meteredStore{Store: st, in: in}
	newMeter := func(dir store.Direction) meter { return meter{in: in, dir: dir, leased: &sync.Map{}} }
	ms.inbound = &meteredInbound{inboundRepo{st.Inbound()}, meteredLeases{st.Inbound(), newMeter(store.DirectionInbound)}}
	ms.outbound = &meteredOutbound{outboundRepo{st.Outbound()}, meteredLeases{st.Outbound(), newMeter(store.DirectionOutbound)}}
	ms.internal = &meteredInternal{internalRepo{st.Internal()}, meteredLeases{st.Internal(), newMeter(store.DirectionInternal)}}
	return ms
}

func (s *meteredStore) Inbound() store.InboundRepository   { return s.inbound }
func (s *meteredStore) Outbound() store.OutboundRepository { return s.outbound }
func (s *meteredStore) Internal() store.InternalRepository { return s.internal }

// meter remembers the key of each event leased by this process, since the
// fenced operations only carry the event id.
type meter struct {
	in     *instruments
	dir    store.Direction
	leased *sync.Map // event id -> key
}

func (m meter) enqueued(key string, r store.EnqueueResult, err error) {
	if err == nil && r.Inserted {
		m.in.enqueued.WithLabelValues(string(m.dir), key).Inc()
	}
}

func (m meter) claimed(id, key string) {
	m.leased.Store(id, key)
	m.in.claimed.WithLabelValues(string(m.dir), key).Inc()
}

func (m meter) key(id string, forget bool) string {
	var v any
	var ok bool
	if forget {
		v, ok = m.leased.LoadAndDelete(id)
	} else {
		v, ok = m.leased.Load(id)
	}
	if !ok {
		return "unknown"
	}
	return v.(string)
}

// lost returns the ids of a batch whose leases were lost, so they are not counted.
func lost(err error) map[string]bool {
	var lle *store.LeaseLostError
	if !errors.As(err, &lle) {
		return nil
	}
	ids := map[string]bool{}
	for _, l := range lle.Leases {
		ids[l.ID] = true
	}
	return ids
}

func (m meter) complete(leases []store.Lease, err error) {
	gone := lost(err)
	if err != nil && gone == nil {
		return // nothing known to be applied
	}
	for _, l := range leases {
		k := m.key(l.ID, true)
		if !gone[l.ID] {
			m.in.processed.WithLabelValues(string(m.dir), k).Inc()
		}
	}
}

func (m meter) release(leases []store.Lease, err error) {
	gone := lost(err)
	if err != nil && gone == nil {
		return
	}
	for _, l := range leases {
		k := m.key(l.ID, true)
		if !gone[l.ID] {
			m.in.released.WithLabelValues(string(m.dir), k).Inc()
		}
	}
}

func (m meter) fail(l store.Lease, err error) {
	k := m.key(l.ID, true)
	if err == nil {
		m.in.failed.WithLabelValues(string(m.dir), k).Inc()
	}
}

func (m meter) retry(l store.Lease, r store.RetryResult, err error) {
	k := m.key(l.ID, true)
	switch {
	case err != nil:
	case r.Dead:
		m.in.failed.WithLabelValues(string(m.dir), k).Inc()
	default:
		m.in.retried.WithLabelValues(string(m.dir), k).Inc()
	}
}

// meteredInbound counts inbound enqueues and claims; meteredLeases, one level
// shallower than the repository, shadows its fenced state changes.
type meteredInbound struct {
	inboundRepo
	meteredLeases
}

// inboundRepo pushes the repository's methods one embedding level down.
type inboundRepo struct{ store.InboundRepository }

func (r *meteredInbound) Enqueue(ctx context.Context, ev store.InboundEvent) (store.EnqueueResult, error) {
	res, err := r.InboundRepository.Enqueue(ctx, ev)
	r.m.enqueued(ev.Source, res, err)
	return res, err
}

func (r *meteredInbound) EnqueueTx(ctx context.Context, tx store.DBTX, ev store.InboundEvent) (store.EnqueueResult, error) {
	// Counted when the call succeeds; the caller's transaction may still roll back.
	res, err := r.InboundRepository.EnqueueTx(ctx, tx, ev)
	r.m.enqueued(ev.Source, res, err)
	return res, err
}

func (r *meteredInbound) EnqueueBatch(ctx context.Context, evs []store.InboundEvent) ([]store.EnqueueResult, error) {
	res, err := r.InboundRepository.EnqueueBatch(ctx, evs)
	if err == nil {
		for i, x := range res {
			if i < len(evs) {
				r.m.enqueued(evs[i].Source, x, nil)
			}
		}
	}
	return res, err
}

func (r *meteredInbound) Claim(ctx context.Context, p store.ClaimParams) ([]store.InboundEvent, error) {
	evs, err := r.InboundRepository.Claim(ctx, p)
	for _, e := range evs {
		r.m.claimed(e.ID, e.Source)
	}
	return evs, err
}

func (r *meteredInbound) ClaimIDs(ctx context.Context, ids []string, p store.ClaimParams) ([]store.InboundEvent, error) {
	evs, err := r.InboundRepository.ClaimIDs(ctx, ids, p)
	for _, e := range evs {
		r.m.claimed(e.ID, e.Source)
	}
	return evs, err
}

// meteredOutbound counts outbound enqueues and claims; meteredLeases, one level
// shallower than the repository, shadows its fenced state changes.
type meteredOutbound struct {
	outboundRepo
	meteredLeases
}

// outboundRepo pushes the repository's methods one embedding level down.
type outboundRepo struct{ store.OutboundRepository }

func (r *meteredOutbound) Enqueue(ctx context.Context, ev store.OutboundEvent) (store.EnqueueResult, error) {
	res, err := r.OutboundRepository.Enqueue(ctx, ev)
	r.m.enqueued(ev.Destination, res, err)
	return res, err
}

func (r *meteredOutbound) EnqueueTx(ctx context.Context, tx store.DBTX, ev store.OutboundEvent) (store.EnqueueResult, error) {
	res, err := r.OutboundRepository.EnqueueTx(ctx, tx, ev)
	r.m.enqueued(ev.Destination, res, err)
	return res, err
}

func (r *meteredOutbound) Claim(ctx context.Context, p store.ClaimParams) ([]store.OutboundEvent, error) {
	evs, err := r.OutboundRepository.Claim(ctx, p)
	for _, e := range evs {
		r.m.claimed(e.ID, e.Destination)
	}
	return evs, err
}

func (r *meteredOutbound) ClaimIDs(ctx context.Context, ids []string, p store.ClaimParams) ([]store.OutboundEvent, error) {
	evs, err := r.OutboundRepository.ClaimIDs(ctx, ids, p)
	for _, e := range evs {
		r.m.claimed(e.ID, e.Destination)
	}
	return evs, err
}

// meteredInternal counts internal enqueues and claims; meteredLeases, one level
// shallower than the repository, shadows its fenced state changes.
type meteredInternal struct {
	internalRepo
	meteredLeases
}

// internalRepo pushes the repository's methods one embedding level down.
type internalRepo struct{ store.InternalRepository }

func (r *meteredInternal) EnqueueTx(ctx context.Context, tx store.DBTX, ev store.InternalEvent) (store.EnqueueResult, error) {
	res, err := r.InternalRepository.EnqueueTx(ctx, tx, ev)
	r.m.enqueued("", res, err)
	return res, err
}

func (r *meteredInternal) Claim(ctx context.Context, p store.ClaimParams) ([]store.InternalEvent, error) {
	evs, err := r.InternalRepository.Claim(ctx, p)
	for _, e := range evs {
		r.m.claimed(e.ID, "")
	}
	return evs, err
}

// meteredLeases performs the fenced state changes of one queue and counts them.
type meteredLeases struct {
	ops store.LeaseOps
	m   meter
}

func (l meteredLeases) Complete(ctx context.Context, leases ...store.Lease) error {
	err := l.ops.Complete(ctx, leases...)
	l.m.complete(leases, err)
	return err
}

// CompleteTx counts the completions when the caller's transaction accepted
// them; one rolled back afterwards (its apply failed) is counted all the same.
func (l meteredLeases) CompleteTx(ctx context.Context, tx store.DBTX, leases ...store.Lease) error {
	err := l.ops.CompleteTx(ctx, tx, leases...)
	l.m.complete(leases, err)
	return err
}

func (l meteredLeases) Fail(ctx context.Context, lease store.Lease, msg string) error {
	err := l.ops.Fail(ctx, lease, msg)
	l.m.fail(lease, err)
	return err
}

func (l meteredLeases) IncrementRetry(ctx context.Context, lease store.Lease, msg string, minDelay time.Duration) (store.RetryResult, error) {
	res, err := l.ops.IncrementRetry(ctx, lease, msg, minDelay)
	l.m.retry(lease, res, err)
	return res, err
}

func (l meteredLeases) Release(ctx context.Context, delay time.Duration, leases ...store.Lease) error {
	err := l.ops.Release(ctx, delay, leases...)
	l.m.release(leases, err)
	return err
}

var (
	_ store.Store              = (*meteredStore)(nil)
	_ store.InboundRepository  = (*meteredInbound)(nil)
	_ store.OutboundRepository = (*meteredOutbound)(nil)
	_ store.InternalRepository = (*meteredInternal)(nil)
)
