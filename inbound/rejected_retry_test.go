package inbound

import (
	"context"
	"testing"
	"time"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// TestRejectedLogRunsAgainAfterADeadlock: the rejected log's transaction,
// rolled back by the database as a deadlock, runs again, so that a refused
// event is kept and its delivery is not answered with an error.
func TestRejectedLogRunsAgainAfterADeadlock(t *testing.T) {
	ctx := context.Background()
	for _, d := range []store.Dialect{store.Postgres, store.MySQL} {
		t.Run(dbtest.Name(d), func(t *testing.T) {
			db := dbtest.Migrated(t, d)
			st, err := hubsync.NewStore(db.DB, d, store.Config{})
			if err != nil {
				t.Fatal(err)
			}
			log, err := NewRejectedLog(st)
			if err != nil {
				t.Fatal(err)
			}
			fired := dbtest.FailOnce(t, db.DB, d, "hubsync_rejected_webhook", "INSERT", 1)
			err = log.RecordRejected(ctx, []RejectedEvent{{Reason: EventRejectMalformed, Message: "event 1: not an object", RawPayload: "[]", ReceivedAt: time.Now()}})
			if err != nil {
				t.Fatalf("RecordRejected after one injected deadlock: %v", err)
			}
			if n := fired(); n < 2 {
				t.Errorf("the insert ran %d times; want the deadlocked try and a retry", n)
			}
			if got, err := log.List(ctx, RejectedFilter{}); err != nil || len(got) != 1 {
				t.Errorf("List after the retried RecordRejected = %d events, %v; want 1", len(got), err)
			}
		})
	}
}
