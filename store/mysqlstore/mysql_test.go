package mysqlstore_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/hubsync/hubsync/store"
)

// TestInsertIgnoreConcurrentTx enqueues one idempotency key from many concurrent
// caller transactions (repeatable read, MySQL's default): exactly one inserts,
// every other sees the winner's id, none fails.
func TestInsertIgnoreConcurrentTx(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, store.Config{})
	const n = 16
	ev := store.InboundEvent{Source: "hubspot", ExternalID: "1", ObjectType: "contacts", EventType: store.EventUpdate,
		Payload: json.RawMessage(`{}`), IdempotencyKey: "same"}
	results := make([]store.EnqueueResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			tx, err := s.DB().BeginTx(ctx, nil)
			if err != nil {
				errs[i] = err
				return
			}
			// An earlier read fixes the transaction's snapshot before the insert.
			var one int
			if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM _System_IntegrationInbound").Scan(&one); err != nil {
				errs[i] = err
				tx.Rollback()
				return
			}
			results[i], errs[i] = s.Inbound().EnqueueTx(ctx, tx, ev)
			if errs[i] != nil {
				tx.Rollback()
				return
			}
			errs[i] = tx.Commit()
		})
	}
	wg.Wait()
	inserted := 0
	var id string
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("enqueue %d: %v", i, errs[i])
		}
		if results[i].Inserted {
			inserted++
			id = results[i].ID
		}
	}
	if inserted != 1 {
		t.Fatalf("%d inserts, want exactly 1", inserted)
	}
	for i, r := range results {
		if r.ID != id {
			t.Errorf("result %d has id %s, want the winner's %s", i, r.ID, id)
		}
	}
	var rows int
	if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM _System_IntegrationInbound WHERE IdempotencyKey = 'same'").Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("rows with the key = %d, %v; want 1", rows, err)
	}
}
