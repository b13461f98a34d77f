package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/pgstore"
	"github.com/hubsync/hubsync/store/sqlitestore"
)

func TestEnqueuePgxTxNeedsPostgres(t *testing.T) {
	st, err := sqlitestore.New(dbtest.Migrated(t, store.SQLite).DB, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := outbox.Snapshot{ID: "r1", Fields: map[string]any{}}.Marshal()
	ev := store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: "r1", EventType: store.EventCreate, Payload: payload}
	if _, err := pgstore.EnqueuePgxTx(context.Background(), st, nil, ev); !errors.Is(err, pgstore.ErrNoPgx) {
		t.Fatalf("pgx enqueue on sqlite: %v, want ErrNoPgx", err)
	}
}

func TestEnqueuePgxTx(t *testing.T) {
	db := dbtest.Migrated(t, store.Postgres)
	st, err := pgstore.New(db.DB, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	payload, _ := outbox.Snapshot{ID: "r1", Fields: map[string]any{}}.Marshal()
	ev := store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: "r1", EventType: store.EventCreate, Payload: payload}

	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgstore.EnqueuePgxTx(ctx, st, tx, ev); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	tx, err = conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := pgstore.EnqueuePgxTx(outbox.WithSyncSource(ctx, "hubspot"), st, tx, ev); err != nil || res.Inserted {
		t.Fatalf("sync-sourced enqueue = %+v, %v; want skipped", res, err)
	}
	res, err := pgstore.EnqueuePgxTx(ctx, st, tx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	pending, err := st.Outbound().GetPending(ctx, "hubspot", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].ID != res.ID {
		t.Fatalf("pending = %+v; want only the committed event %s", pending, res.ID)
	}
}
