package sqlitestore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/sqlitestore"
	"github.com/hubsync/hubsync/store/storetest"
)

func newStore(t *testing.T, cfg store.Config) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.New(dbtest.Migrated(t, store.SQLite).DB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Exercise(t, func(t *testing.T, cfg store.Config) store.Store { return newStore(t, cfg) })
}

// TestClaimCompleteSmoke is a direct check of the main flow, independent of the
// conformance suite.
func TestClaimCompleteSmoke(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	s := newStore(t, store.Config{Now: func() time.Time { return now }})
	out := s.Outbound()
	var ids []string
	for i := range 3 {
		res, err := out.Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts",
			RecordID: "r" + string(rune('0'+i)), EventType: store.EventUpdate, Payload: json.RawMessage(`{"i":` + string(rune('0'+i)) + `}`)})
		if err != nil || !res.Inserted {
			t.Fatalf("enqueue: %v %+v", err, res)
		}
		ids = append(ids, res.ID)
		now = now.Add(time.Millisecond)
	}
	got, err := out.Claim(ctx, store.ClaimParams{Key: "hubspot", Owner: "w1", LeaseDuration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].ID != ids[0] || got[2].ID != ids[2] {
		t.Fatalf("claimed %+v, want the three events in order", got)
	}
	if got[0].Status != store.StatusProcessing || got[0].Attempt != 1 || got[0].LeaseOwner != "w1" ||
		!got[0].LeaseExpiresDate.Equal(now.Add(time.Minute)) {
		t.Fatalf("claimed event state %+v", got[0].QueueState)
	}
	if again, err := out.Claim(ctx, store.ClaimParams{Key: "hubspot"}); err != nil || len(again) != 0 {
		t.Fatalf("second claim = %v, %v; want nothing", again, err)
	}
	leases := []store.Lease{got[0].Lease(), got[1].Lease(), {ID: got[2].ID, Attempt: 7}}
	err = out.Complete(ctx, leases...)
	var lost *store.LeaseLostError
	if !errors.As(err, &lost) || len(lost.Leases) != 1 || lost.Leases[0].ID != got[2].ID || !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("complete with one stale lease: %v", err)
	}
	e, err := out.Get(ctx, ids[0])
	if err != nil || e.Status != store.StatusProcessed || e.ProcessedDate == nil {
		t.Fatalf("get completed: %+v %v", e, err)
	}
	if _, err := out.Get(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get missing: %v", err)
	}
}

func TestInboundDuplicate(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, store.Config{})
	ev := store.InboundEvent{Source: "hubspot", ExternalID: "1", ObjectType: "contacts", EventType: store.EventCreate,
		Payload: json.RawMessage(`{}`), IdempotencyKey: "k1"}
	first, err := s.Inbound().Enqueue(ctx, ev)
	if err != nil || !first.Inserted {
		t.Fatal(first, err)
	}
	dup, err := s.Inbound().Enqueue(ctx, ev)
	if err != nil || dup.Inserted || dup.ID != first.ID {
		t.Fatalf("duplicate = %+v, %v; want Inserted false and id %s", dup, err, first.ID)
	}
}

// TestNewRefusesAnotherOpening: a database opened with modernc's own driver
// (deferred transactions), or with ours but a DSN without a busy timeout, is
// refused with an error naming OpenDB: two writers on it would fail with
// SQLITE_BUSY instead of waiting.
func TestNewRefusesAnotherOpening(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	for name, open := range map[string]func() (*sql.DB, error){
		"modernc driver":  func() (*sql.DB, error) { return sql.Open("sqlite", path) },
		"no busy timeout": func() (*sql.DB, error) { return sql.Open(sqlitestore.DriverName, "file:"+path) },
	} {
		db, err := open()
		if err != nil {
			t.Fatal(err)
		}
		_, err = sqlitestore.New(db, store.Config{})
		db.Close()
		if err == nil || !strings.Contains(err.Error(), "sqlitestore.OpenDB") {
			t.Errorf("%s: New = %v; want a refusal naming sqlitestore.OpenDB", name, err)
		}
	}
	db, err := sqlitestore.OpenDB(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := sqlitestore.New(db, store.Config{}); err != nil {
		t.Fatalf("OpenDB's database: %v", err)
	}
}
