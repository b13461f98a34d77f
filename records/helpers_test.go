package records

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/storetest"
)

func newStore(t testing.TB, d store.Dialect, cfg store.Config) store.Store {
	t.Helper()
	db := dbtest.Migrated(t, d)
	st, err := hubsync.NewStore(db.DB, d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

type bundle struct {
	st    store.Store
	svc   *Service
	links *links.Links
	clock *storetest.Clock
	d     store.Dialect
}

func setup(t testing.TB, d store.Dialect, cfg Config) *bundle {
	t.Helper()
	clock := storetest.NewClock(storetest.ClockStartDefault)
	st := newStore(t, d, store.Config{Now: clock.Now})
	lk := links.New(st)
	svc, err := New(st, lk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{st: st, svc: svc, links: lk, clock: clock, d: d}
}

// outbound is one row of _System_IntegrationOutbound, read back in claim order.
type outbound struct {
	ID, Destination, EventType string
	Payload, Old               *outbox.Snapshot
}

func (b *bundle) outbound(t *testing.T, recordID string) []outbound {
	t.Helper()
	rows, err := b.st.DB().QueryContext(context.Background(), dialectsql.Rebind(b.d,
		"SELECT Id, Destination, EventType, Payload, OldPayload FROM _System_IntegrationOutbound WHERE RecordID = ? ORDER BY CreatedDate, Id"), recordID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []outbound
	for rows.Next() {
		var o outbound
		var p, old []byte
		if err := rows.Scan(&o.ID, &o.Destination, &o.EventType, &p, &old); err != nil {
			t.Fatal(err)
		}
		if o.Payload, err = outbox.ParseSnapshot(p); err != nil {
			t.Fatal(err)
		}
		if o.Old, err = outbox.ParseSnapshot(old); err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// internal is one row of _System_OutboxEvent.
type internal struct {
	EventType string
	Payload   *outbox.Snapshot
	Metadata  map[string]string
}

func (b *bundle) internal(t *testing.T, recordID string) []internal {
	t.Helper()
	rows, err := b.st.DB().QueryContext(context.Background(), dialectsql.Rebind(b.d,
		"SELECT EventType, Payload, Metadata FROM _System_OutboxEvent WHERE RecordID = ? ORDER BY CreatedDate, Id"), recordID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []internal
	for rows.Next() {
		var e internal
		var p, m []byte
		if err := rows.Scan(&e.EventType, &p, &m); err != nil {
			t.Fatal(err)
		}
		if e.Payload, err = outbox.ParseSnapshot(p); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(m, &e.Metadata); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (b *bundle) count(t testing.TB, table string) int {
	t.Helper()
	var n int
	// table is one of the test's constants, never input.
	if err := b.st.DB().QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
