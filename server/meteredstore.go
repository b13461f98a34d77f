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

// EnqueueOutboundPgx enqueues through the wrapped PostgreSQL store; the event
// is counted once its transaction is seen committed.
func (s meteredPgxStore) EnqueueOutboundPgx(ctx context.Context, tx pgx.Tx, ev store.OutboundEvent) (store.EnqueueResult, error) {
	res, err := s.pg.EnqueueOutboundPgx(ctx, tx, ev)
	s.outbound.m.enqueuedTx(ev.Destination, "", res, err)
	return res, err
}

// confirmEnqueues counts the events enqueued in callers' transactions that
// have committed since; the stats collector runs it with every reading.
func (s *meteredStore) confirmEnqueues(ctx context.Context) {
	s.inbound.confirmEnqueues(ctx)
	s.outbound.confirmEnqueues(ctx)
	s.internal.confirmEnqueues(ctx)
}

// newMeteredStore wraps st. The result keeps st's optional capabilities: a
// PostgreSQL store's wrapper still takes pgx transactions.
func newMeteredStore(st store.Store, in *instruments) store.Store {
	ms := &meteredStore{Store: st, in: in,
		inbound: &meteredInbound{
			meteredQueue: newMeteredQueue[store.InboundEvent](st.Inbound(), in, st.Now),
			batch:        st.Inbound(),
		},
		outbound: newMeteredQueue[store.OutboundEvent](st.Outbound(), in, st.Now),
		internal: newMeteredQueue[store.InternalEvent](st.Internal(), in, st.Now),
	}
	in.stats.confirm = ms.confirmEnqueues
	if pg, ok := st.(pgstore.PgxEnqueuer); ok {
		return meteredPgxStore{ms, pg}
	}
	return ms
}

func (s *meteredStore) Inbound() store.InboundRepository   { return s.inbound }
func (s *meteredStore) Outbound() store.OutboundRepository { return s.outbound }
func (s *meteredStore) Internal() store.InternalRepository { return s.internal }

// Bounds of the metered store's bookkeeping.
const (
	// pendingTxMaxAge is how long an event enqueued inside a caller's
	// transaction waits to be seen committed; after it, it is taken as rolled
	// back and never counted (a transaction open longer is miscounted).
	pendingTxMaxAge = 10 * time.Minute
	// pendingTxMax bounds the events waiting to be seen committed; past it, new
	// ones are not counted.
	pendingTxMax = 100_000
	// pendingTxChecksMax bounds the reads one confirmation round makes.
	pendingTxChecksMax = 1000
	// pendingTxCheckAfter is how long an event enqueued in a transaction is
	// left to be claimed by this process (which confirms it for free) before a
	// confirmation round reads it back.
	pendingTxCheckAfter = 30 * time.Second
	// leaseSweepInterval is how often the ids of abandoned leases are forgotten.
	leaseSweepInterval = time.Minute
)

// meter remembers the key of each event leased by this process, since the
// fenced operations only carry the event id, and the events enqueued inside a
// caller's transaction until their commit is seen.
type meter struct {
	in  *instruments
	dir store.Direction
	now func() time.Time

	mu        sync.Mutex
	leased    map[string]leasedEvent // event id -> its key and when to forget it
	lastSweep time.Time
	pending   map[string]pendingEnqueue // event id -> enqueued in a transaction not yet seen committed
}

type leasedEvent struct {
	key    string
	forget time.Time
}

type pendingEnqueue struct {
	key       string
	at        time.Time
	processed bool // stored processed (see storedProcessed)
}

func newMeter(in *instruments, dir store.Direction, now func() time.Time) *meter {
	return &meter{in: in, dir: dir, now: now, leased: map[string]leasedEvent{}, pending: map[string]pendingEnqueue{}}
}

// enqueued counts an enqueue that has committed; status is the event's
// QueueState.Status.
func (m *meter) enqueued(key string, status store.Status, r store.EnqueueResult, err error) {
	if err == nil && r.Inserted {
		m.in.enqueued.WithLabelValues(string(m.dir), key).Inc()
		if m.storedProcessed(status) {
			m.countProcessed(key)
		}
	}
}

// storedProcessed reports whether an event enqueued with status was stored
// already processed: an inbound one (the echoes of our own writes). It is
// processed by this process as much as one it completes, and counting it so
// keeps an inbound queue's enqueued and processed counts in step; it is
// never claimed.
func (m *meter) storedProcessed(status store.Status) bool {
	return m.dir == store.DirectionInbound && status == store.StatusProcessed
}

func (m *meter) countProcessed(key string) {
	m.in.processed.WithLabelValues(string(m.dir), key).Inc()
	m.in.activity.Add(processedSeries(m.dir), 1)
}

// enqueuedTx notes an enqueue inside the caller's transaction: it is counted
// once seen committed (claimed by this process, or read back by confirm), and
// never if the transaction rolls back.
func (m *meter) enqueuedTx(key string, status store.Status, r store.EnqueueResult, err error) {
	if err != nil || !r.Inserted {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pending) < pendingTxMax {
		m.pending[r.ID] = pendingEnqueue{key: key, at: m.now(), processed: m.storedProcessed(status)}
	}
}

// confirm reads back the events still waiting to be seen committed, once
// pendingTxCheckAfter old (most are claimed here before): each one found is
// counted; one still absent after pendingTxMaxAge is forgotten (its
// transaction rolled back). get is the queue's Get.
func (m *meter) confirm(ctx context.Context, get func(context.Context, string) error) {
	m.mu.Lock()
	now := m.now()
	ids := make([]string, 0, min(len(m.pending), pendingTxChecksMax))
	for id, p := range m.pending {
		if len(ids) == pendingTxChecksMax {
			break
		}
		if now.Sub(p.at) >= pendingTxCheckAfter {
			ids = append(ids, id)
		}
	}
	m.mu.Unlock()
	for _, id := range ids {
		err := get(ctx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return // the database is unwell; try again at the next round
		}
		m.mu.Lock()
		p, ok := m.pending[id]
		switch {
		case !ok: // claimed meanwhile, and counted then
		case err == nil:
			delete(m.pending, id)
			m.in.enqueued.WithLabelValues(string(m.dir), p.key).Inc()
			if p.processed {
				m.countProcessed(p.key)
			}
		case m.now().Sub(p.at) > pendingTxMaxAge:
			delete(m.pending, id)
		}
		m.mu.Unlock()
	}
}

func (m *meter) claimed(id, key string, lease time.Duration) {
	now := m.now()
	m.mu.Lock()
	if p, ok := m.pending[id]; ok {
		// Claimed, so committed: its enqueue counts now.
		delete(m.pending, id)
		m.in.enqueued.WithLabelValues(string(m.dir), p.key).Inc()
	}
	// A lease this process abandons (a crash of its worker, a lease lost and
	// never settled) is forgotten a lease duration after it expired.
	m.leased[id] = leasedEvent{key: key, forget: now.Add(2 * lease)}
	if now.Sub(m.lastSweep) >= leaseSweepInterval {
		m.lastSweep = now
		for id, l := range m.leased {
			if now.After(l.forget) {
				delete(m.leased, id)
			}
		}
	}
	m.mu.Unlock()
	m.in.claimed.WithLabelValues(string(m.dir), key).Inc()
}

// key returns the key of a leased event and forgets the lease.
func (m *meter) key(id string) string {
	k, _ := m.take(id)
	return k
}

// take is key, and reports whether the lease was known ("unknown" when not:
// forgotten, or already settled).
func (m *meter) take(id string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.leased[id]
	if !ok {
		return "unknown", false
	}
	delete(m.leased, id)
	return l.key, true
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

func (m *meter) complete(leases []store.Lease, err error) { m.completed(leases, err, false) }

// completeTx is complete for completions inside a caller's transaction. A
// lease already counted by an earlier one is not counted again: a transaction
// the database rolled back as transient (a deadlock) runs again whole, its
// fence included (records.Service retries it).
func (m *meter) completeTx(leases []store.Lease, err error) { m.completed(leases, err, true) }

func (m *meter) completed(leases []store.Lease, err error, once bool) {
	gone := lost(err)
	if err != nil && gone == nil {
		return // nothing known to be applied
	}
	for _, l := range leases {
		k, ok := m.take(l.ID)
		if !gone[l.ID] && (ok || !once) {
			m.countProcessed(k)
		}
	}
}

func (m *meter) release(leases []store.Lease, err error) {
	gone := lost(err)
	if err != nil && gone == nil {
		return
	}
	for _, l := range leases {
		k := m.key(l.ID)
		if !gone[l.ID] {
			m.in.released.WithLabelValues(string(m.dir), k).Inc()
		}
	}
}

func (m *meter) fail(l store.Lease, err error) {
	k := m.key(l.ID)
	if err == nil {
		m.in.failed.WithLabelValues(string(m.dir), k).Inc()
	}
}

func (m *meter) retry(l store.Lease, r store.RetryResult, err error) {
	k := m.key(l.ID)
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
	m *meter
}

func newMeteredQueue[E store.Event](q store.Queue[E], in *instruments, now func() time.Time) *meteredQueue[E] {
	var zero E
	return &meteredQueue[E]{Queue: q, m: newMeter(in, zero.Header().Direction, now)}
}

// confirmEnqueues counts the events enqueued in callers' transactions that
// have committed since (see meter.confirm).
func (q *meteredQueue[E]) confirmEnqueues(ctx context.Context) {
	q.m.confirm(ctx, func(ctx context.Context, id string) error {
		_, err := q.Queue.Get(ctx, id)
		return err
	})
}

func (q *meteredQueue[E]) Enqueue(ctx context.Context, ev E) (store.EnqueueResult, error) {
	res, err := q.Queue.Enqueue(ctx, ev)
	h := ev.Header()
	q.m.enqueued(h.Key, h.Status, res, err)
	return res, err
}

func (q *meteredQueue[E]) EnqueueTx(ctx context.Context, tx store.DBTX, ev E) (store.EnqueueResult, error) {
	// The caller's transaction may still roll back: counted once seen committed.
	res, err := q.Queue.EnqueueTx(ctx, tx, ev)
	h := ev.Header()
	q.m.enqueuedTx(h.Key, h.Status, res, err)
	return res, err
}

func (q *meteredQueue[E]) Claim(ctx context.Context, p store.ClaimParams) ([]E, error) {
	evs, err := q.Queue.Claim(ctx, p)
	q.claimed(evs, p)
	return evs, err
}

func (q *meteredQueue[E]) ClaimIDs(ctx context.Context, ids []string, p store.ClaimParams) ([]E, error) {
	evs, err := q.Queue.ClaimIDs(ctx, ids, p)
	q.claimed(evs, p)
	return evs, err
}

func (q *meteredQueue[E]) claimed(evs []E, p store.ClaimParams) {
	lease := p.WithDefaults().LeaseDuration
	now := q.m.now()
	for _, e := range evs {
		h := e.Header()
		q.m.claimed(h.ID, h.Key, lease)
		due := h.CreatedDate
		if h.NextAttemptDate.After(due) {
			due = h.NextAttemptDate
		}
		if !due.IsZero() {
			q.m.in.eventWait.WithLabelValues(string(q.m.dir), h.Key).Observe(max(0, now.Sub(due).Seconds()))
		}
		q.m.in.lastClaim.WithLabelValues(string(q.m.dir), h.Key).Set(float64(now.UnixMilli()) / 1e3)
	}
}

func (q *meteredQueue[E]) Complete(ctx context.Context, leases ...store.Lease) error {
	err := q.Queue.Complete(ctx, leases...)
	q.m.complete(leases, err)
	return err
}

// CompleteTx counts the completions when the caller's transaction accepted
// them; one rolled back afterwards (its apply failed) is counted all the same,
// and a lease completed again (its transaction rolled back as a deadlock and
// run again) only once.
func (q *meteredQueue[E]) CompleteTx(ctx context.Context, tx store.DBTX, leases ...store.Lease) error {
	err := q.Queue.CompleteTx(ctx, tx, leases...)
	q.m.completeTx(leases, err)
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
				r.m.enqueued(evs[i].Source, evs[i].Status, x, nil)
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
