package server

import (
	"context"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/pgstore"
)

// TestMeteredStoreCountsLeaseOps checks that the wrapper's fenced operations,
// not the wrapped repository's, are the ones callers reach: each outcome moves
// exactly its own counter.
func TestMeteredStoreCountsLeaseOps(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, testMeteredStoreCountsLeaseOps)
}

func testMeteredStoreCountsLeaseOps(t *testing.T, d store.Dialect) {
	ctx := context.Background()
	in, ms := openMetered(t, d, store.Config{Retry: store.RetryPolicy{MaxAttempts: 2}})
	out := ms.Outbound()

	for _, rec := range []string{"r1", "r2", "r3", "r4"} {
		snap, _ := outbox.Snapshot{ID: rec, Fields: map[string]any{}}.Marshal()
		if _, err := out.Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: rec, EventType: store.EventCreate, Payload: snap}); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := out.Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: 10, Owner: "t"})
	if err != nil || len(evs) != 4 {
		t.Fatalf("claim = %d events, %v", len(evs), err)
	}
	if err := out.Complete(ctx, evs[0].Lease()); err != nil {
		t.Fatal(err)
	}
	if err := out.Fail(ctx, evs[1].Lease(), "bad"); err != nil {
		t.Fatal(err)
	}
	if _, err := out.IncrementRetry(ctx, evs[2].Lease(), "later", 0); err != nil {
		t.Fatal(err)
	}
	if err := out.Release(ctx, 0, evs[3].Lease()); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		got  float64
		want float64
	}{
		"enqueued":  {value(t, in.enqueued.WithLabelValues("outbound", "hubspot")), 4},
		"claimed":   {value(t, in.claimed.WithLabelValues("outbound", "hubspot")), 4},
		"processed": {value(t, in.processed.WithLabelValues("outbound", "hubspot")), 1},
		"failed":    {value(t, in.failed.WithLabelValues("outbound", "hubspot")), 1},
		"retried":   {value(t, in.retried.WithLabelValues("outbound", "hubspot")), 1},
		"released":  {value(t, in.released.WithLabelValues("outbound", "hubspot")), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", name, c.got, c.want)
		}
	}
}

// TestMeteredStoreKeepsPgxEnqueue checks that the metrics wrapper does not
// drop a capability of the store it wraps: the server's store on PostgreSQL
// still takes pgx transactions (pgstore.EnqueuePgxTx), and counts the event.
func TestMeteredStoreKeepsPgxEnqueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tdb := dbtest.Migrated(t, store.Postgres)
	db, err := hubsync.Open(ctx, tdb.URL, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	in := newInstruments(db.Store, slog.New(slog.DiscardHandler), StatsTTLDefault)
	ms := newMeteredStore(db.Store, in)
	conn, err := pgx.Connect(ctx, tdb.URL) // the URL carries the test schema's search_path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })

	snap, _ := outbox.Snapshot{ID: "r1", Fields: map[string]any{"email": "a@example.com"}}.Marshal()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pgstore.EnqueuePgxTx(ctx, ms, tx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: "r1", EventType: store.EventCreate, Payload: snap})
	if err != nil {
		t.Fatalf("EnqueuePgxTx through the metered store: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if !res.Inserted {
		t.Fatalf("EnqueuePgxTx = %+v, want Inserted", res)
	}
	if _, err := ms.Outbound().Get(ctx, res.ID); err != nil {
		t.Fatalf("the event enqueued with pgx: %v", err)
	}
	// Committed in the caller's transaction: counted once seen committed, here
	// by a claim.
	if _, err := ms.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot"}); err != nil {
		t.Fatal(err)
	}
	if got := value(t, in.enqueued.WithLabelValues("outbound", "hubspot")); got != 1 {
		t.Errorf("enqueued = %v, want 1", got)
	}
}

func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestMeteredStoreCountsARetriedCompleteTxOnce: a fenced apply whose
// transaction the database rolled back as a deadlock runs again, its
// CompleteTx included (records.Service retries it); the event is processed
// once and counted once.
func TestMeteredStoreCountsARetriedCompleteTxOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in, ms := openMetered(t, store.SQLite, store.Config{})
	out := ms.Outbound()
	snap, _ := outbox.Snapshot{ID: "r1", Fields: map[string]any{}}.Marshal()
	if _, err := out.Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: "r1", EventType: store.EventCreate, Payload: snap}); err != nil {
		t.Fatal(err)
	}
	evs, err := out.Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: 1, Owner: "t"})
	if err != nil || len(evs) != 1 {
		t.Fatalf("claim = %d events, %v", len(evs), err)
	}
	for _, commit := range []bool{false, true} { // the deadlock's victim, then its retry
		tx, err := ms.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := out.CompleteTx(ctx, tx, evs[0].Lease()); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := value(t, in.processed.WithLabelValues("outbound", "hubspot")); got != 1 {
		t.Errorf("processed = %v, want 1", got)
	}
	if got := value(t, in.processed.WithLabelValues("outbound", "unknown")); got != 0 {
		t.Errorf("processed of an unknown key = %v, want 0: the retried completion was counted twice", got)
	}
}

// openMetered opens a migrated database of dialect d with cfg and returns the
// metrics wrapper of its store, with its instruments.
func openMetered(t *testing.T, d store.Dialect, cfg store.Config) (*instruments, store.Store) {
	t.Helper()
	ctx := context.Background()
	db, err := hubsync.Open(ctx, dbtest.New(t, d).URL, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := hubsync.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	in := newInstruments(db.Store, slog.New(slog.DiscardHandler), StatsTTLDefault)
	return in, newMeteredStore(db.Store, in)
}
