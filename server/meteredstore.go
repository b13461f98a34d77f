package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/pgstore"
)

// meteredStore wraps a store.Store and counts, per queue and exact
// Source/Destination, what this process enqueues, claims, completes, retries and
// dead-letters. Wrapping the store (rather than asking every worker for hooks)
// counts the same way whichever worker does the work.
type meteredStore struct {
	store.Store
	in       *instruments
	inbound  *meteredInbound
	outbound *meteredQueue[store.OutboundEvent]
	internal *meteredQueue[store.InternalEvent]
}

// Unwrap returns the wrapped store, for code that needs a backend's own type.
func (s *meteredStore) Unwrap() store.Store { return s.Store }

// meteredPgxStore is a meteredStore of a store that takes pgx transactions: the
// wrapper keeps that capability (and counts what goes through it).
type meteredPgxStore struct {
	*meteredStore
	pg pgstore.PgxEnqueuer
}

// EnqueueOutboundPgx enqueues through the wrapped PostgreSQL store and counts
// the event.
func (s meteredPgxStore) EnqueueOutboundPgx(ctx context.Context, tx pgx.Tx, ev store.OutboundEvent) (store.EnqueueResult, error) {
	res, err := s.pg.EnqueueOutboundPgx(ctx, tx, ev)
	s.outbound.m.enqueued(ev.Destination, res, err)
	return res, err
}

// newMeteredStore wraps st. The result keeps st's optional capabilities: a
// PostgreSQL store's wrapper still takes pgx transactions.
func newMeteredStore(st store.Store, in *instruments) store.Store {
	ms := &meteredStore{Store: st, in: in,
		inbound: &meteredInbound{
			meteredQueue: newMeteredQueue[store.InboundEvent](st.Inbound(), in),
			batch:        st.Inbound(),
		},
		outbound: newMeteredQueue[store.OutboundEvent](st.Outbound(), in),
		internal: newMeteredQueue[store.InternalEvent](st.Internal(), in),
	}
	if pg, ok := st.(pgstore.PgxEnqueuer); ok {
		return meteredPgxStore{ms, pg}
	}
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

// meteredQueue counts the enqueues, claims and fenced state changes of one
// queue; every other method is the wrapped queue's.
type meteredQueue[E store.Event] struct {
	store.Queue[E]
	m meter
}

func newMeteredQueue[E store.Event](q store.Queue[E], in *instruments) *meteredQueue[E] {
	var zero E
	return &meteredQueue[E]{Queue: q, m: meter{in: in, dir: zero.Header().Direction, leased: &sync.Map{}}}
}

func (q *meteredQueue[E]) Enqueue(ctx context.Context, ev E) (store.EnqueueResult, error) {
	res, err := q.Queue.Enqueue(ctx, ev)
	q.m.enqueued(ev.Header().Key, res, err)
	return res, err
}

func (q *meteredQueue[E]) EnqueueTx(ctx context.Context, tx store.DBTX, ev E) (store.EnqueueResult, error) {
	// Counted when the call succeeds; the caller's transaction may still roll back.
	res, err := q.Queue.EnqueueTx(ctx, tx, ev)
	q.m.enqueued(ev.Header().Key, res, err)
	return res, err
}

func (q *meteredQueue[E]) Claim(ctx context.Context, p store.ClaimParams) ([]E, error) {
	evs, err := q.Queue.Claim(ctx, p)
	q.claimed(evs)
	return evs, err
}

func (q *meteredQueue[E]) ClaimIDs(ctx context.Context, ids []string, p store.ClaimParams) ([]E, error) {
	evs, err := q.Queue.ClaimIDs(ctx, ids, p)
	q.claimed(evs)
	return evs, err
}

func (q *meteredQueue[E]) claimed(evs []E) {
	for _, e := range evs {
		h := e.Header()
		q.m.claimed(h.ID, h.Key)
	}
}

func (q *meteredQueue[E]) Complete(ctx context.Context, leases ...store.Lease) error {
	err := q.Queue.Complete(ctx, leases...)
	q.m.complete(leases, err)
	return err
}

// CompleteTx counts the completions when the caller's transaction accepted
// them; one rolled back afterwards (its apply failed) is counted all the same.
func (q *meteredQueue[E]) CompleteTx(ctx context.Context, tx store.DBTX, leases ...store.Lease) error {
	err := q.Queue.CompleteTx(ctx, tx, leases...)
	q.m.complete(leases, err)
	return err
}

func (q *meteredQueue[E]) Fail(ctx context.Context, lease store.Lease, msg string) error {
	err := q.Queue.Fail(ctx, lease, msg)
	q.m.fail(lease, err)
	return err
}

func (q *meteredQueue[E]) IncrementRetry(ctx context.Context, lease store.Lease, msg string, minDelay time.Duration) (store.RetryResult, error) {
	res, err := q.Queue.IncrementRetry(ctx, lease, msg, minDelay)
	q.m.retry(lease, res, err)
	return res, err
}

func (q *meteredQueue[E]) Release(ctx context.Context, delay time.Duration, leases ...store.Lease) error {
	err := q.Queue.Release(ctx, delay, leases...)
	q.m.release(leases, err)
	return err
}

// meteredInbound adds the inbound queue's EnqueueBatch.
type meteredInbound struct {
	*meteredQueue[store.InboundEvent]
	batch store.BatchEnqueuer[store.InboundEvent]
}

func (r *meteredInbound) EnqueueBatch(ctx context.Context, evs []store.InboundEvent) ([]store.EnqueueResult, error) {
	res, err := r.batch.EnqueueBatch(ctx, evs)
	if err == nil {
		for i, x := range res {
			if i < len(evs) {
				r.m.enqueued(evs[i].Source, x, nil)
			}
		}
	}
	return res, err
}

var (
	_ store.Store             = (*meteredStore)(nil)
	_ store.Store             = meteredPgxStore{}
	_ pgstore.PgxEnqueuer     = meteredPgxStore{}
	_ store.InboundRepository = (*meteredInbound)(nil)
)
