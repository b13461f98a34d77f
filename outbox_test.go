package hubsync_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/pgstore"
	"github.com/hubsync/hubsync/store/sqlitestore"
)

func TestEnqueueTxStampsAndValidates(t *testing.T) {
	st, err := sqlitestore.New(dbtest.Migrated(t, store.SQLite).DB, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := hubsync.WithSyncSource(context.Background(), "hubspot")
	payload, _ := hubsync.Snapshot{ID: "r1", Fields: map[string]any{"a": 1}}.Marshal()
	ev := store.OutboundEvent{Destination: "salesforce", ObjectType: "contacts", RecordID: "r1", EventType: store.EventCreate, Payload: payload}
	res, err := hubsync.EnqueueTx(ctx, st, st.DB(), ev)
	if err != nil || !res.Inserted {
		t.Fatalf("enqueue = %+v, %v", res, err)
	}
	got, err := st.Outbound().Get(context.Background(), res.ID)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := hubsync.ParseSnapshot(got.Payload)
	if err != nil || !snap.SyncSourced("hubspot") {
		t.Fatalf("stored payload %s does not carry the sync source (%v)", got.Payload, err)
	}
	for _, bad := range []store.OutboundEvent{
		{Destination: "salesforce", ObjectType: "contacts", RecordID: "r1", Payload: []byte(`[1]`)},
		{Destination: "salesforce", ObjectType: "contacts", RecordID: "r1"},
		{Destination: "salesforce", ObjectType: "contacts", RecordID: "r1", Payload: payload, OldPayload: []byte(`"x"`)},
	} {
		if _, err := hubsync.EnqueueTx(ctx, st, st.DB(), bad); !errors.Is(err, hubsync.ErrInvalidPayload) {
			t.Errorf("enqueue %+v: %v, want ErrInvalidPayload", bad, err)
		}
	}
	if _, err := hubsync.EnqueuePgxTx(ctx, st, nil, ev); !errors.Is(err, hubsync.ErrNoPgx) {
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
	payload, _ := hubsync.Snapshot{ID: "r1", Fields: map[string]any{}}.Marshal()
	ev := store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: "r1", EventType: store.EventCreate, Payload: payload}

	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hubsync.EnqueuePgxTx(ctx, st, tx, ev); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	tx, err = conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := hubsync.EnqueuePgxTx(hubsync.WithSyncSource(ctx, "hubspot"), st, tx, ev); err != nil || res.Inserted {
		t.Fatalf("sync-sourced enqueue = %+v, %v; want skipped", res, err)
	}
	res, err := hubsync.EnqueuePgxTx(ctx, st, tx, ev)
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
