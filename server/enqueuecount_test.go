package server

import (
	"context"
	"log/slog"
	"testing"
	"time"

	hubsync "github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testcheck"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/storetest"
)

// TestEnqueuedCountsOnlyCommitted: an EnqueueTx whose transaction rolls back
// never counts in hubsync_events_enqueued_total; one that commits counts once,
// whether it is seen by a claim or by a statistics reading.
func TestEnqueuedCountsOnlyCommitted(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		clock := storetest.NewClock(storetest.ClockStartDefault)
		db, err := hubsync.Open(ctx, dbtest.Migrated(t, d).URL, store.Config{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		in := newInstruments(db.Store, slog.New(slog.DiscardHandler), time.Nanosecond)
		ms := newMeteredStore(db.Store, in)
		enqueued := func() float64 { return value(t, in.enqueued.WithLabelValues("outbound", "hubspot")) }
		enqueueTx := func(rec string, commit bool) {
			t.Helper()
			snap, _ := outbox.Snapshot{ID: rec, Fields: map[string]any{}}.Marshal()
			tx, err := db.SQL.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ms.Outbound().EnqueueTx(ctx, tx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: rec, EventType: store.EventCreate, Payload: snap}); err != nil {
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
		scrape := func() {
			t.Helper()
			clock.Advance(time.Second)
			if _, err := in.reg.Gather(); err != nil {
				t.Fatal(err)
			}
		}

		enqueueTx("rolled-back", false)
		scrape()
		if got := enqueued(); got != 0 {
			t.Fatalf("after a rolled-back EnqueueTx and a scrape: enqueued = %v, want 0", got)
		}
		// Past pendingTxMaxAge the rolled-back event is forgotten, uncounted.
		clock.Advance(pendingTxMaxAge)
		scrape()
		if got, n := enqueued(), pendingOf(ms); got != 0 || n != 0 {
			t.Fatalf("long after the rollback: enqueued = %v, %d pending; want 0, 0", got, n)
		}

		enqueueTx("seen-by-scrape", true)
		if got := enqueued(); got != 0 {
			t.Fatalf("before the commit is seen: enqueued = %v, want 0", got)
		}
		scrape() // too early: left for a claim to confirm
		if got := enqueued(); got != 0 {
			t.Fatalf("committed, then a scrape within pendingTxCheckAfter: enqueued = %v, want 0", got)
		}
		clock.Advance(pendingTxCheckAfter)
		scrape()
		if got := enqueued(); got != 1 {
			t.Fatalf("committed, then a scrape after pendingTxCheckAfter: enqueued = %v, want 1", got)
		}

		enqueueTx("seen-by-claim", true)
		evs, err := ms.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: 10})
		if err != nil || len(evs) != 2 {
			t.Fatalf("claim = %d events, %v; want 2", len(evs), err)
		}
		if got := enqueued(); got != 2 {
			t.Fatalf("committed, then claimed: enqueued = %v, want 2", got)
		}
		scrape()
		if got := enqueued(); got != 2 {
			t.Fatalf("a scrape after the claim counted again: enqueued = %v, want 2", got)
		}
	})
}

// TestMeteredStoreForgetsAbandonedLeases: the key of an event whose lease is
// never settled is forgotten after its lease, so the map does not grow.
func TestMeteredStoreForgetsAbandonedLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := storetest.NewClock(storetest.ClockStartDefault)
	db, err := hubsync.Open(ctx, dbtest.Migrated(t, store.SQLite).URL, store.Config{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ms := testcheck.As[*meteredStore](t, "newMeteredStore's store", newMeteredStore(db.Store, newInstruments(db.Store, slog.New(slog.DiscardHandler), StatsTTLDefault)))
	out := ms.Outbound()
	for _, rec := range []string{"a", "b"} {
		snap, _ := outbox.Snapshot{ID: rec, Fields: map[string]any{}}.Marshal()
		if _, err := out.Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: rec, EventType: store.EventCreate, Payload: snap}); err != nil {
			t.Fatal(err)
		}
	}
	p := store.ClaimParams{Key: "hubspot", Limit: 1, LeaseDuration: time.Minute}
	if evs, err := out.Claim(ctx, p); err != nil || len(evs) != 1 {
		t.Fatalf("claim = %d, %v", len(evs), err)
	}
	leased := func() int {
		ms.outbound.m.mu.Lock()
		defer ms.outbound.m.mu.Unlock()
		return len(ms.outbound.m.leased)
	}
	if n := leased(); n != 1 {
		t.Fatalf("%d leases remembered, want 1", n)
	}
	// The first lease is abandoned; a claim well after it sweeps it away.
	clock.Advance(10 * time.Minute)
	if evs, err := out.Claim(ctx, p); err != nil || len(evs) == 0 {
		t.Fatalf("second claim = %d, %v", len(evs), err)
	}
	ms.outbound.m.mu.Lock()
	_, kept := ms.outbound.m.leased["a"]
	ms.outbound.m.mu.Unlock()
	if n := leased(); n != 1 {
		t.Fatalf("%d leases remembered after the first one expired, want only the new one (kept the old: %v)", n, kept)
	}
}

// pendingOf is the number of outbound enqueues ms waits to see committed.
func pendingOf(ms store.Store) int {
	var m *meter
	switch s := ms.(type) {
	case *meteredStore:
		m = s.outbound.m
	case meteredPgxStore:
		m = s.outbound.m
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending)
}
