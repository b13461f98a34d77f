package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

// kind describes one of the three queues, so that one test body covers all of
// them.
type kind struct {
	name  string
	dir   store.Direction
	table string
	// keyed queues (inbound, outbound) claim by exact Source/Destination.
	keyed bool
}

var (
	kindInbound  = kind{name: "inbound", dir: store.DirectionInbound, table: "_System_IntegrationInbound", keyed: true}
	kindOutbound = kind{name: "outbound", dir: store.DirectionOutbound, table: "_System_IntegrationOutbound", keyed: true}
	kindInternal = kind{name: "internal", dir: store.DirectionInternal, table: "_System_OutboxEvent"}
	kinds        = []kind{kindInbound, kindOutbound, kindInternal}
)

// item is an event of any queue, reduced to what the tests compare.
type item struct {
	ID      string
	Key     string // Source, Destination, "" for internal
	Object  string // ObjectType
	Record  string // ExternalID (inbound) or RecordID
	Payload json.RawMessage
	store.QueueState
}

func (it item) lease() store.Lease { return store.Lease{ID: it.ID, Attempt: it.Attempt} }

func (it item) String() string {
	return fmt.Sprintf("%s[%s/%s/%s status=%s attempt=%d retry=%d]", it.ID, it.Key, it.Object, it.Record, it.Status, it.Attempt, it.RetryCount)
}

func itemOf[E store.Event](e E) item {
	h := e.Header()
	return item{ID: h.ID, Key: h.Key, Object: h.ObjectType, Record: h.RecordID, Payload: h.Payload, QueueState: h.QueueState}
}

func items[E store.Event](evs []E) []item {
	out := make([]item, len(evs))
	for i, e := range evs {
		out[i] = itemOf(e)
	}
	return out
}

// spec says what to enqueue; zero fields get defaults.
type spec struct {
	Key     string // Source/Destination; default "hubspot"; ignored by internal
	Object  string // default "contacts"
	Record  string // ExternalID/RecordID; default a fresh one
	Payload json.RawMessage
}

const keyDefault = "hubspot"

// anyQueue is one store.Queue with its event type out of sight: events go in as
// specs and come out as items. The methods that do not mention the event type
// are the queue's own.
type anyQueue interface {
	store.LeaseOps
	Cleanup(ctx context.Context, cutoff time.Time, batchSize int) (int64, error)
	Requeue(ctx context.Context, ids ...string) (int64, error)
	RequeueAll(ctx context.Context, key string) (int64, error)

	enqueue(ctx context.Context, sp spec) (store.EnqueueResult, error)
	enqueueTx(ctx context.Context, tx store.DBTX, sp spec) (store.EnqueueResult, error)
	claim(ctx context.Context, p store.ClaimParams) ([]item, error)
	claimIDs(ctx context.Context, ids []string, p store.ClaimParams) ([]item, error)
	getPending(ctx context.Context, key string, limit int) ([]item, error)
	get(ctx context.Context, id string) (item, error)
	deadLetters(ctx context.Context, f store.DeadLetterFilter) ([]item, error)
}

// typedQueue implements anyQueue for one event type; event builds the event a
// filled spec describes.
type typedQueue[E store.Event] struct {
	store.Queue[E]
	event func(sp spec) E
}

func (q typedQueue[E]) enqueue(ctx context.Context, sp spec) (store.EnqueueResult, error) {
	return q.Enqueue(ctx, q.event(sp))
}

func (q typedQueue[E]) enqueueTx(ctx context.Context, tx store.DBTX, sp spec) (store.EnqueueResult, error) {
	return q.EnqueueTx(ctx, tx, q.event(sp))
}

func (q typedQueue[E]) claim(ctx context.Context, p store.ClaimParams) ([]item, error) {
	evs, err := q.Claim(ctx, p)
	return items(evs), err
}

func (q typedQueue[E]) claimIDs(ctx context.Context, ids []string, p store.ClaimParams) ([]item, error) {
	evs, err := q.ClaimIDs(ctx, ids, p)
	return items(evs), err
}

func (q typedQueue[E]) getPending(ctx context.Context, key string, limit int) ([]item, error) {
	evs, err := q.GetPending(ctx, key, limit)
	return items(evs), err
}

func (q typedQueue[E]) get(ctx context.Context, id string) (item, error) {
	e, err := q.Get(ctx, id)
	return itemOf(e), err
}

func (q typedQueue[E]) deadLetters(ctx context.Context, f store.DeadLetterFilter) ([]item, error) {
	evs, err := q.DeadLetters(ctx, f)
	return items(evs), err
}

// queue is one queue of one store, with the helpers the cases share.
type queue struct {
	kind
	anyQueue
	s     store.Store
	clock *Clock
	seq   *atomic.Int64 // for unique idempotency keys
}

// newQueue returns the queue of kind k of s.
func newQueue(k kind, s store.Store, clock *Clock) *queue {
	q := &queue{kind: k, s: s, clock: clock, seq: new(atomic.Int64)}
	switch k.dir {
	case store.DirectionInbound:
		q.anyQueue = typedQueue[store.InboundEvent]{s.Inbound(), func(sp spec) store.InboundEvent {
			return store.InboundEvent{
				Source: sp.Key, ExternalID: sp.Record, ObjectType: sp.Object, EventType: store.EventUpdate,
				Payload: sp.Payload, IdempotencyKey: fmt.Sprintf("idem-%s-%d", sp.Record, q.seq.Add(1)),
			}
		}}
	case store.DirectionOutbound:
		q.anyQueue = typedQueue[store.OutboundEvent]{s.Outbound(), func(sp spec) store.OutboundEvent {
			return store.OutboundEvent{Destination: sp.Key, ObjectType: sp.Object, RecordID: sp.Record, EventType: store.EventUpdate, Payload: sp.Payload}
		}}
	default:
		q.anyQueue = typedQueue[store.InternalEvent]{s.Internal(), func(sp spec) store.InternalEvent {
			return store.InternalEvent{EventType: store.EventRecordUpdated, ObjectType: sp.Object, RecordID: sp.Record, Payload: sp.Payload}
		}}
	}
	return q
}

func (q *queue) fill(sp spec) spec {
	if sp.Key == "" {
		sp.Key = keyDefault
	}
	if sp.Object == "" {
		sp.Object = "contacts"
	}
	n := q.seq.Add(1)
	if sp.Record == "" {
		sp.Record = "rec-" + strconv.FormatInt(n, 10)
	}
	if sp.Payload == nil {
		sp.Payload = json.RawMessage(`{"n":` + strconv.FormatInt(n, 10) + `}`)
	}
	return sp
}

// enqueueTx enqueues inside tx.
func (q *queue) enqueueTx(ctx context.Context, tx store.DBTX, sp spec) (store.EnqueueResult, error) {
	return q.anyQueue.enqueueTx(ctx, tx, q.fill(sp))
}

// enqueue enqueues in its own transaction.
func (q *queue) enqueue(ctx context.Context, sp spec) (store.EnqueueResult, error) {
	return q.anyQueue.enqueue(ctx, q.fill(sp))
}

// mustEnqueue enqueues and advances the clock by a millisecond, so that events
// enqueued one after another have distinct, increasing CreatedDates.
func (q *queue) mustEnqueue(t testing.TB, sp spec) string {
	t.Helper()
	res, err := q.enqueue(context.Background(), sp)
	if err != nil {
		t.Fatalf("%s: enqueue %+v: %v", q.name, sp, err)
	}
	if !res.Inserted || res.ID == "" {
		t.Fatalf("%s: enqueue %+v: result %+v, want Inserted with an ID", q.name, sp, res)
	}
	q.clock.Advance(time.Millisecond)
	return res.ID
}

// mustEnqueueMany enqueues the events in one transaction of store.DB() (one
// commit, so large fixtures stay fast on fsync-bound databases), advancing the
// clock by a microsecond after each so their CreatedDates follow their order.
func (q *queue) mustEnqueueMany(t testing.TB, sps []spec) []string {
	t.Helper()
	ctx := context.Background()
	tx, err := q.s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	out := make([]string, len(sps))
	for i, sp := range sps {
		res, err := q.enqueueTx(ctx, tx, sp)
		if err != nil {
			t.Fatalf("%s: EnqueueTx %+v: %v", q.name, sp, err)
		}
		out[i] = res.ID
		q.clock.Advance(time.Microsecond)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("%s: commit %d enqueues: %v", q.name, len(sps), err)
	}
	return out
}

func (q *queue) claimKey(ctx context.Context, key string, limit int, lease time.Duration, owner string) ([]item, error) {
	return q.claim(ctx, store.ClaimParams{Key: key, Limit: limit, LeaseDuration: lease, Owner: owner})
}

// mustClaim claims from keyDefault.
func (q *queue) mustClaim(t testing.TB, limit int, lease time.Duration, owner string) []item {
	t.Helper()
	return q.mustClaimKey(t, keyDefault, limit, lease, owner)
}

func (q *queue) mustClaimKey(t testing.TB, key string, limit int, lease time.Duration, owner string) []item {
	t.Helper()
	evs, err := q.claimKey(context.Background(), key, limit, lease, owner)
	if err != nil {
		t.Fatalf("%s: claim key=%q limit=%d owner=%q at %s: %v", q.name, key, limit, owner, q.clock.Now().Format(time.RFC3339Nano), err)
	}
	return evs
}

// claimIDsFor claims the named events for owner.
// claimIDsFor is ClaimIDs of the named heads alone (MaxPerRecord 1);
// testClaimIDsFollowers covers the followers that come with them.
func (q *queue) claimIDsFor(ctx context.Context, ids []string, lease time.Duration, owner string) ([]item, error) {
	return q.claimIDs(ctx, ids, store.ClaimParams{Limit: len(ids), LeaseDuration: lease, Owner: owner, MaxPerRecord: 1})
}

func (q *queue) mustGet(t testing.TB, id string) item {
	t.Helper()
	it, err := q.get(context.Background(), id)
	if err != nil {
		t.Fatalf("%s: get %s: %v", q.name, id, err)
	}
	return it
}

// countRows counts the rows of the queue's table with the given status ("" for
// all), reading the database directly rather than trusting the store.
func (q *queue) countRows(t testing.TB, status store.Status) int {
	t.Helper()
	query := "SELECT COUNT(*) FROM " + q.table
	var args []any
	if status != "" {
		query += " WHERE Status = ?"
		args = append(args, string(status))
	}
	var n int
	if err := q.s.DB().QueryRow(dialectsql.Rebind(q.s.Dialect(), query), args...).Scan(&n); err != nil {
		t.Fatalf("%s: %s: %v", q.name, query, err)
	}
	return n
}

func ids(its []item) []string {
	out := make([]string, len(its))
	for i, it := range its {
		out[i] = it.ID
	}
	return out
}

func leases(its []item) []store.Lease {
	out := make([]store.Lease, len(its))
	for i, it := range its {
		out[i] = it.lease()
	}
	return out
}
