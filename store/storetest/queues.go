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

func fromInbound(e store.InboundEvent) item {
	return item{ID: e.ID, Key: e.Source, Object: e.ObjectType, Record: e.ExternalID, Payload: e.Payload, QueueState: e.QueueState}
}

func fromOutbound(e store.OutboundEvent) item {
	return item{ID: e.ID, Key: e.Destination, Object: e.ObjectType, Record: e.RecordID, Payload: e.Payload, QueueState: e.QueueState}
}

func fromInternal(e store.InternalEvent) item {
	return item{ID: e.ID, Object: e.ObjectType, Record: e.RecordID, Payload: e.Payload, QueueState: e.QueueState}
}

func mapItems[E any](evs []E, f func(E) item) []item {
	out := make([]item, len(evs))
	for i, e := range evs {
		out[i] = f(e)
	}
	return out
}

// queue adapts one queue of one store to a common shape.
type queue struct {
	kind
	s     store.Store
	clock *Clock
	seq   atomic.Int64 // for unique idempotency keys
}

// spec says what to enqueue; zero fields get defaults.
type spec struct {
	Key     string // Source/Destination; default "hubspot"; ignored by internal
	Object  string // default "contacts"
	Record  string // ExternalID/RecordID; default a fresh one
	Payload json.RawMessage
}

const keyDefault = "hubspot"

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

func (q *queue) inboundEvent(sp spec) store.InboundEvent {
	return store.InboundEvent{
		Source: sp.Key, ExternalID: sp.Record, ObjectType: sp.Object, EventType: store.EventUpdate,
		Payload: sp.Payload, IdempotencyKey: fmt.Sprintf("idem-%s-%d", sp.Record, q.seq.Add(1)),
	}
}

func (q *queue) outboundEvent(sp spec) store.OutboundEvent {
	return store.OutboundEvent{Destination: sp.Key, ObjectType: sp.Object, RecordID: sp.Record, EventType: store.EventUpdate, Payload: sp.Payload}
}

func (q *queue) internalEvent(sp spec) store.InternalEvent {
	return store.InternalEvent{EventType: store.EventRecordUpdated, ObjectType: sp.Object, RecordID: sp.Record, Payload: sp.Payload}
}

// enqueueTx enqueues inside tx.
func (q *queue) enqueueTx(ctx context.Context, tx store.DBTX, sp spec) (store.EnqueueResult, error) {
	sp = q.fill(sp)
	switch q.dir {
	case store.DirectionInbound:
		return q.s.Inbound().EnqueueTx(ctx, tx, q.inboundEvent(sp))
	case store.DirectionOutbound:
		return q.s.Outbound().EnqueueTx(ctx, tx, q.outboundEvent(sp))
	default:
		return q.s.Internal().EnqueueTx(ctx, tx, q.internalEvent(sp))
	}
}

// enqueue enqueues in its own transaction (internal: a transaction of store.DB()).
func (q *queue) enqueue(ctx context.Context, sp spec) (store.EnqueueResult, error) {
	switch q.dir {
	case store.DirectionInbound:
		return q.s.Inbound().Enqueue(ctx, q.inboundEvent(q.fill(sp)))
	case store.DirectionOutbound:
		return q.s.Outbound().Enqueue(ctx, q.outboundEvent(q.fill(sp)))
	}
	tx, err := q.s.DB().BeginTx(ctx, nil)
	if err != nil {
		return store.EnqueueResult{}, err
	}
	res, err := q.enqueueTx(ctx, tx, sp)
	if err != nil {
		tx.Rollback()
		return res, err
	}
	return res, tx.Commit()
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

func (q *queue) claim(ctx context.Context, key string, limit int, lease time.Duration, owner string) ([]item, error) {
	return q.claimParams(ctx, store.ClaimParams{Key: key, Limit: limit, LeaseDuration: lease, Owner: owner})
}

func (q *queue) claimParams(ctx context.Context, p store.ClaimParams) ([]item, error) {
	switch q.dir {
	case store.DirectionInbound:
		evs, err := q.s.Inbound().Claim(ctx, p)
		return mapItems(evs, fromInbound), err
	case store.DirectionOutbound:
		evs, err := q.s.Outbound().Claim(ctx, p)
		return mapItems(evs, fromOutbound), err
	default:
		evs, err := q.s.Internal().Claim(ctx, p)
		return mapItems(evs, fromInternal), err
	}
}

// mustClaim claims from keyDefault.
func (q *queue) mustClaim(t testing.TB, limit int, lease time.Duration, owner string) []item {
	t.Helper()
	return q.mustClaimKey(t, keyDefault, limit, lease, owner)
}

func (q *queue) mustClaimKey(t testing.TB, key string, limit int, lease time.Duration, owner string) []item {
	t.Helper()
	evs, err := q.claim(context.Background(), key, limit, lease, owner)
	if err != nil {
		t.Fatalf("%s: claim key=%q limit=%d owner=%q at %s: %v", q.name, key, limit, owner, q.clock.Now().Format(time.RFC3339Nano), err)
	}
	return evs
}

func (q *queue) claimIDs(ctx context.Context, ids []string, lease time.Duration, owner string) ([]item, error) {
	p := store.ClaimParams{Limit: len(ids), LeaseDuration: lease, Owner: owner}
	switch q.dir {
	case store.DirectionInbound:
		evs, err := q.s.Inbound().ClaimIDs(ctx, ids, p)
		return mapItems(evs, fromInbound), err
	case store.DirectionOutbound:
		evs, err := q.s.Outbound().ClaimIDs(ctx, ids, p)
		return mapItems(evs, fromOutbound), err
	}
	panic("storetest: the internal queue has no ClaimIDs")
}

func (q *queue) getPending(ctx context.Context, key string, limit int) ([]item, error) {
	switch q.dir {
	case store.DirectionInbound:
		evs, err := q.s.Inbound().GetPending(ctx, key, limit)
		return mapItems(evs, fromInbound), err
	case store.DirectionOutbound:
		evs, err := q.s.Outbound().GetPending(ctx, key, limit)
		return mapItems(evs, fromOutbound), err
	}
	panic("storetest: the internal queue has no GetPending")
}

func (q *queue) get(ctx context.Context, id string) (item, error) {
	switch q.dir {
	case store.DirectionInbound:
		e, err := q.s.Inbound().Get(ctx, id)
		return fromInbound(e), err
	case store.DirectionOutbound:
		e, err := q.s.Outbound().Get(ctx, id)
		return fromOutbound(e), err
	default:
		e, err := q.s.Internal().Get(ctx, id)
		return fromInternal(e), err
	}
}

func (q *queue) mustGet(t testing.TB, id string) item {
	t.Helper()
	it, err := q.get(context.Background(), id)
	if err != nil {
		t.Fatalf("%s: get %s: %v", q.name, id, err)
	}
	return it
}

func (q *queue) ops() store.LeaseOps {
	switch q.dir {
	case store.DirectionInbound:
		return q.s.Inbound()
	case store.DirectionOutbound:
		return q.s.Outbound()
	default:
		return q.s.Internal()
	}
}

func (q *queue) cleanup(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	switch q.dir {
	case store.DirectionInbound:
		return q.s.Inbound().Cleanup(ctx, cutoff, batch)
	case store.DirectionOutbound:
		return q.s.Outbound().Cleanup(ctx, cutoff, batch)
	default:
		return q.s.Internal().Cleanup(ctx, cutoff, batch)
	}
}

func (q *queue) deadLetters(ctx context.Context, f store.DeadLetterFilter) ([]item, error) {
	switch q.dir {
	case store.DirectionInbound:
		evs, err := q.s.Inbound().DeadLetters(ctx, f)
		return mapItems(evs, fromInbound), err
	case store.DirectionOutbound:
		evs, err := q.s.Outbound().DeadLetters(ctx, f)
		return mapItems(evs, fromOutbound), err
	default:
		evs, err := q.s.Internal().DeadLetters(ctx, f)
		return mapItems(evs, fromInternal), err
	}
}

func (q *queue) requeue(ctx context.Context, ids ...string) (int64, error) {
	switch q.dir {
	case store.DirectionInbound:
		return q.s.Inbound().Requeue(ctx, ids...)
	case store.DirectionOutbound:
		return q.s.Outbound().Requeue(ctx, ids...)
	default:
		return q.s.Internal().Requeue(ctx, ids...)
	}
}

func (q *queue) requeueAll(ctx context.Context, key string) (int64, error) {
	switch q.dir {
	case store.DirectionInbound:
		return q.s.Inbound().RequeueAll(ctx, key)
	case store.DirectionOutbound:
		return q.s.Outbound().RequeueAll(ctx, key)
	}
	panic("storetest: the internal queue has no RequeueAll")
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
