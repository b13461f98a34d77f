package pgstore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/pgstore"
)

// TestLeaseWritesRetryDeadlocks: Complete, Release and ExtendLease of two
// records' events lock the records' lanes (the update trigger) in one order;
// an application transaction enqueueing events of the same records locks
// them in its own. PostgreSQL breaks the deadlock by failing one side with
// 40P01, here the store's statement (the application's transaction waits
// longer before it checks). The store runs its statement again, as it does
// its own transactions: before, the error reached the relay, whose delivered
// events were then published again once their leases ran out.
func TestLeaseWritesRetryDeadlocks(t *testing.T) {
	for _, op := range []string{"Complete", "Release", "ExtendLease"} {
		t.Run(op, func(t *testing.T) { testLeaseWriteRetriesDeadlock(t, op) })
	}
}

func testLeaseWriteRetriesDeadlock(t *testing.T, op string) {
	ctx := context.Background()
	db := dbtest.Migrated(t, store.Postgres).DB
	st, err := pgstore.New(db, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	q := st.Internal()
	ev := func(rec string) store.InternalEvent {
		return store.InternalEvent{EventType: store.EventRecordUpdated, ObjectType: "contacts", RecordID: rec, Payload: json.RawMessage(`{}`)}
	}
	for _, r := range []string{"a", "b"} {
		if _, err := q.Enqueue(ctx, ev(r)); err != nil {
			t.Fatal(err)
		}
	}
	claimed, err := q.Claim(ctx, store.ClaimParams{Limit: 10, LeaseDuration: time.Minute, Owner: "relay"})
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim: %d events, %v", len(claimed), err)
	}
	leases := []store.Lease{claimed[0].Lease(), claimed[1].Lease()}

	app, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Rollback() //nolint:errcheck // committed below
	var appPID int
	if err := app.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&appPID); err != nil {
		t.Fatal(err)
	}
	if _, err := app.ExecContext(ctx, "SET LOCAL deadlock_timeout = '1min'"); err != nil {
		t.Fatal(err)
	}
	if _, err := q.EnqueueTx(ctx, app, ev("b")); err != nil { // holds lane b
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		switch op {
		case "Complete":
			done <- q.Complete(ctx, leases...)
		case "Release":
			done <- q.Release(ctx, 0, leases...)
		case "ExtendLease":
			done <- q.ExtendLease(ctx, time.Hour, leases...)
		}
	}()
	testwait.For(t, op+" to wait for lane b", func() bool {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))", appPID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
	// Lane a, which the store's statement holds: a deadlock.
	if _, err := q.EnqueueTx(ctx, app, ev("a")); err != nil {
		t.Fatalf("the application's enqueue: %v", err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := testwait.Recv(t, op, done); err != nil {
		t.Fatalf("%s after a deadlock: %v; want it run again", op, err)
	}
}
