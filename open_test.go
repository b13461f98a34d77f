package hubsync_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/migrate"
	"github.com/hubsync/hubsync/store"
)

func TestOpenSQLiteClaimComplete(t *testing.T) {
	ctx := context.Background()
	db, err := hubsync.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "hub.db"), store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := hubsync.CheckSchema(ctx, db); !errors.Is(err, migrate.ErrNotMigrated) {
		t.Fatalf("CheckSchema before Migrate = %v, want ErrNotMigrated", err)
	}
	if applied, err := hubsync.Migrate(ctx, db); err != nil || len(applied) == 0 {
		t.Fatalf("Migrate = %v, %v", applied, err)
	}
	if err := hubsync.CheckSchema(ctx, db); err != nil {
		t.Fatalf("CheckSchema after Migrate: %v", err)
	}
	tx, err := db.SQL.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Store.Outbound().EnqueueTx(ctx, tx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts",
		RecordID: "1", EventType: store.EventCreate, Payload: json.RawMessage(`{"id":"1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	evs, err := db.Store.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot"})
	if err != nil || len(evs) != 1 || evs[0].ID != res.ID {
		t.Fatalf("claim = %v, %v; want event %s", evs, err, res.ID)
	}
	if err := db.Store.Outbound().Complete(ctx, evs[0].Lease()); err != nil {
		t.Fatal(err)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := hubsync.Open(ctx, "", store.Config{}); err == nil || !strings.Contains(err.Error(), "database URL") {
		t.Errorf("Open(\"\") = %v, want an error naming the database URL", err)
	}
	_, err := hubsync.Open(ctx, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", store.Config{})
	if err == nil || !strings.Contains(err.Error(), "database URL") {
		t.Errorf("Open of an unreachable server = %v, want an error naming the database URL", err)
	}
}
