package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/pgstore"
)

func TestEnqueuePgx(t *testing.T) {
	ctx := context.Background()
	db := dbtest.Migrated(t, store.Postgres)
	s, err := pgstore.New(db.DB, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, db.URL) // the URL carries the test schema's search_path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })

	out := store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: "1", EventType: store.EventUpdate,
		Payload: json.RawMessage(`{"a":1}`), OldPayload: json.RawMessage(`{"a":0}`)}
	in := store.InboundEvent{Source: "hubspot", ExternalID: "9", ObjectType: "contacts", EventType: store.EventUpdate,
		Payload: json.RawMessage(`{"b":2}`), IdempotencyKey: "k"}
	internal := store.InternalEvent{EventType: store.EventRecordUpdated, ObjectType: "contacts", RecordID: "1",
		Payload: json.RawMessage(`{}`), Metadata: json.RawMessage(`{"sync_source":"hubspot"}`)}

	// A rolled-back transaction leaves no event.
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rolled, err := s.EnqueueOutboundPgx(ctx, tx, out)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Outbound().Get(ctx, rolled.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("event of a rolled-back pgx transaction: Get err = %v, want ErrNotFound", err)
	}

	tx, err = conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := s.EnqueueOutboundPgx(ctx, tx, out)
	if err != nil {
		t.Fatal(err)
	}
	ri, err := s.EnqueueInboundPgx(ctx, tx, in)
	if err != nil || !ri.Inserted {
		t.Fatalf("inbound: %+v, %v", ri, err)
	}
	dup, err := s.EnqueueInboundPgx(ctx, tx, in)
	if err != nil || dup.Inserted || dup.ID != ri.ID {
		t.Fatalf("duplicate inbound in the same pgx tx: %+v, %v; want Inserted false, id %s", dup, err, ri.ID)
	}
	rn, err := s.EnqueueInternalPgx(ctx, tx, internal)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	gotOut, err := s.Outbound().Get(ctx, ro.ID)
	if err != nil || gotOut.RecordID != "1" || !jsonEqual(gotOut.OldPayload, out.OldPayload) {
		t.Fatalf("outbound after commit: %+v, %v", gotOut, err)
	}
	if _, err := s.Inbound().Get(ctx, ri.ID); err != nil {
		t.Fatal(err)
	}
	gotInt, err := s.Internal().Get(ctx, rn.ID)
	if err != nil || !jsonEqual(gotInt.Metadata, internal.Metadata) {
		t.Fatalf("internal after commit: %+v, %v", gotInt, err)
	}
	// A duplicate from outside, after the commit, sees the committed row.
	tx, err = conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if dup, err := s.EnqueueInboundPgx(ctx, tx, in); err != nil || dup.Inserted || dup.ID != ri.ID {
		t.Fatalf("duplicate inbound after commit: %+v, %v", dup, err)
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && equalJSON(x, y)
}

func equalJSON(x, y any) bool {
	bx, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return string(bx) == string(by)
}
