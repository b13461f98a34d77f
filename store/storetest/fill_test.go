package storetest

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

// dbOnly is just enough of a store.Store for FillOutbound and Analyze.
type dbOnly struct {
	store.Store
	d  store.Dialect
	db *sql.DB
}

func (s dbOnly) Dialect() store.Dialect { return s.d }
func (s dbOnly) DB() *sql.DB            { return s.db }

func TestFillOutbound(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		s := dbOnly{d: d, db: dbtest.Migrated(t, d).DB}
		base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		if err := FillOutbound(ctx, s, "hubspot", "a-", 1500, base); err != nil {
			t.Fatal(err)
		}
		if err := FillOutbound(ctx, s, "hubspot", "b-", 10, base.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := Analyze(ctx, s); err != nil {
			t.Fatal(err)
		}
		q := &queue{kind: kindOutbound, s: s} // only countRows: s has no queues
		if n := q.countRows(t, store.StatusPending); n != 1510 {
			t.Errorf("%d pending rows, want 1510", n)
		}
		var id, rec string
		query := dialectsql.Rebind(d, "SELECT Id, RecordID FROM _System_IntegrationOutbound WHERE Destination = ? ORDER BY CreatedDate, Id LIMIT 1")
		if err := s.db.QueryRow(query, "hubspot").Scan(&id, &rec); err != nil {
			t.Fatal(err)
		}
		if id != "a-0000000001" || rec != "a-1" {
			t.Errorf("oldest row = %q record %q, want a-0000000001 record a-1", id, rec)
		}
	})
}
