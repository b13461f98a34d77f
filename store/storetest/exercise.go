package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/hubsync/hubsync/store"
)

// NewStoreFunc opens a store on a fresh, migrated, isolated database. It is
// called once per subtest and must arrange for cleanup with t.Cleanup.
type NewStoreFunc func(t *testing.T, cfg store.Config) store.Store

// retryPolicy is the deterministic policy most subtests run with.
var retryPolicy = store.RetryPolicy{MaxAttempts: 3, BackoffBase: 10 * time.Second, BackoffMax: time.Hour, NoJitter: true}

// bundle is what a subtest works with.
type bundle struct {
	clock *Clock
	s     store.Store
	q     *queue
}

type caseFunc func(t *testing.T, b *bundle)

type testCase struct {
	name string
	// only restricts the case to some queues; nil means all three.
	only []store.Direction
	run  caseFunc
}

var cases = []testCase{
	{name: "EnqueueRoundTrip", run: testEnqueueRoundTrip},
	{name: "IdempotentEnqueueConcurrent", only: []store.Direction{store.DirectionInbound}, run: testIdempotentEnqueueConcurrent},
	{name: "EnqueueBatch", only: []store.Direction{store.DirectionInbound}, run: testEnqueueBatch},
	{name: "EnqueueProcessed", only: []store.Direction{store.DirectionInbound}, run: testEnqueueProcessed},
	{name: "Payloads", run: testPayloads},
	{name: "TxRollback", run: testTxRollback},
	{name: "GetNotFound", run: testGetNotFound},
	{name: "GetPending", run: testGetPending},
	{name: "ClaimIDs", run: testClaimIDs},
	{name: "ClaimIDsFollowers", only: []store.Direction{store.DirectionInbound, store.DirectionOutbound}, run: testClaimIDsFollowers},
	{name: "ClaimSetsLease", run: testClaimSetsLease},
	{name: "ClaimExactKey", only: []store.Direction{store.DirectionInbound, store.DirectionOutbound}, run: testClaimExactKey},
	{name: "ConcurrentClaimers", run: testConcurrentClaimers},
	{name: "LeaseExpiry", run: testLeaseExpiry},
	{name: "ExpiredLeaseFirst", run: testExpiredLeaseFirst},
	{name: "ClaimedBeforeKeepsPlace", run: testClaimedBeforeKeepsPlace},
	{name: "Fencing", run: testFencing},
	{name: "ExtendLease", run: testExtendLease},
	{name: "FencingBatchComplete", run: testFencingBatch},
	{name: "CompleteTx", run: testCompleteTx},
	{name: "RecordFollowers", run: testRecordFollowers},
	{name: "FollowerBackoffBlocks", run: testFollowerBackoffBlocks},
	{name: "MaxPerRecord", run: testMaxPerRecord},
	{name: "HotRecordBacklog", run: testHotRecordBacklog},
	{name: "RecordKey", run: testRecordKey},
	{name: "OrderBySequence", run: testOrderBySequence},
	{name: "RequeueToLaneEnd", run: testRequeueToLaneEnd},
	{name: "BatchOrder", only: []store.Direction{store.DirectionInbound}, run: testBatchOrder},
	{name: "BatchAfterEnqueue", only: []store.Direction{store.DirectionInbound}, run: testBatchAfterEnqueue},
	{name: "InboundLaneObjectType", only: []store.Direction{store.DirectionInbound}, run: testInboundLaneObjectType},
	{name: "ReleasedHeadHoldsRecord", run: testReleasedHeadHoldsRecord},
	{name: "ConcurrentMixedClaimers", run: testConcurrentMixedClaimers},
	{name: "BackoffAndMaxAttempts", run: testBackoff},
	{name: "DeadLetterRequeue", run: testDeadLetters},
	{name: "Release", run: testRelease},
	{name: "Cleanup", run: testCleanup},
	{name: "Stats", only: []store.Direction{store.DirectionInbound}, run: testStats},
}

// Exercise runs the conformance suite against the backend newStore opens. Every
// subtest calls newStore for its own store and database, with a Config whose Now
// is a Clock the subtest controls, and runs in parallel with the others.
func Exercise(t *testing.T, newStore NewStoreFunc) {
	t.Helper()
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				if c.only != nil && !slices.Contains(c.only, k.dir) {
					continue
				}
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.run(t, setup(t, k, newStore))
				})
			}
		})
	}
}

func setup(t *testing.T, k kind, newStore NewStoreFunc) *bundle {
	t.Helper()
	clock := NewClock(time.Time{})
	s := newStore(t, store.Config{Now: clock.Now, Retry: retryPolicy})
	if s == nil {
		t.Fatal("storetest: newStore returned nil")
	}
	if got := s.Now(); !got.Equal(clock.Now()) {
		t.Fatalf("store.Now() = %s, want the Config.Now clock's %s", got, clock.Now())
	}
	return &bundle{clock: clock, s: s, q: newQueue(k, s, clock)}
}
