package records

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

// BenchmarkApplyMatchByEmail measures what a HubSpot contact creation costs
// the records service when the contact matches no local record by email (the
// common case: a contact created in HubSpot), against the number of contacts
// already stored. Each op applies one creation whose MatchField is email.
//
//	go test ./records -run '^$' -bench ApplyMatchByEmail -benchtime 200x
func BenchmarkApplyMatchByEmail(b *testing.B) {
	for _, d := range dbtest.Dialects {
		for _, n := range []int{1_000, 10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/contacts=%d", dbtest.Name(d), n), func(b *testing.B) {
				benchMatchByEmail(b, d, n, true)
			})
		}
	}
}

// BenchmarkMatchByEmailUnanalyzed is BenchmarkApplyMatchByEmail at 100,000
// contacts before the server has taken statistics of them: a CRM loaded
// into a fresh database faster than they are taken.
//
//	go test ./records -run '^$' -bench MatchByEmailUnanalyzed -benchtime 200x
func BenchmarkMatchByEmailUnanalyzed(b *testing.B) {
	for _, d := range dbtest.Dialects {
		b.Run(fmt.Sprintf("%s/contacts=%d", dbtest.Name(d), 100_000), func(b *testing.B) {
			benchMatchByEmail(b, d, 100_000, false)
		})
	}
}

// benchMatchByEmail applies b.N HubSpot contact creations that match no
// local record by email, with n contacts stored (bulkContacts).
func benchMatchByEmail(b *testing.B, d store.Dialect, n int, analyzed bool) {
	bu := setup(b, d, Config{})
	bulkContacts(b, bu, n, analyzed)
	ctx := outbox.WithSyncSource(context.Background(), "hubspot")
	at := bu.clock.Now().Add(time.Hour)
	b.ResetTimer()
	for i := range b.N {
		email := fmt.Sprintf("new%d@example.com", i)
		ch := change(store.EventCreate, fmt.Sprint(900_000_000+i), at, map[string]any{"email": email, "name": "New"})
		ch.MatchField, ch.MatchValue = "email", email
		if _, err := bu.svc.Apply(ctx, ch); err != nil {
			b.Fatal(err)
		}
	}
}

// bulkContacts stores n contacts with distinct emails, copies of one
// inserted through the service, in one statement, each linked to a HubSpot
// object, as a synced CRM's are. With analyzed, the tables then have the
// statistics a server gathers soon after such a load; without, they have
// none (PostgreSQL's autovacuum off) or an empty table's (InnoDB's, frozen
// before the load), as a database loaded faster than they are taken.
func bulkContacts(tb testing.TB, bu *bundle, n int, analyzed bool) {
	tb.Helper()
	ctx := context.Background()
	tables := []string{"hubsync_record", "hubsync_link"}
	if !analyzed {
		switch bu.d {
		case store.Postgres:
			for _, table := range tables {
				if _, err := bu.st.DB().ExecContext(ctx, `ALTER TABLE `+table+` SET (autovacuum_enabled = false)`); err != nil {
					tb.Fatal(err)
				}
			}
		case store.MySQL:
			dbtest.FreezeEmptyStatistics(tb, bu.st.DB(), tables...)
			defer dbtest.ReopenTables(tb, bu.st.DB(), tables...)
		}
		// SQLite has statistics only after ANALYZE.
	}
	first, err := bu.svc.Insert(ctx, "contacts", map[string]any{"email": "first@example.com", "name": "First"})
	if err != nil {
		tb.Fatal(err)
	}
	const cols = "INSERT INTO hubsync_record (ObjectType, Id, Fields, Version, CreatedDate, LastModifiedDate) "
	var q string
	switch bu.d {
	case store.Postgres:
		q = cols + `SELECT r.ObjectType, 'bulk-' || n.i, jsonb_build_object('email', 'bulk' || n.i || '@example.com', 'name', 'Bulk ' || n.i),
			r.Version, r.CreatedDate, r.LastModifiedDate
			FROM hubsync_record r, generate_series(1, CAST(? AS INTEGER)) AS n(i) WHERE r.ObjectType = 'contacts' AND r.Id = ?`
	case store.SQLite:
		q = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) ` + cols +
			`SELECT r.ObjectType, 'bulk-' || n.i, json_object('email', 'bulk' || n.i || '@example.com', 'name', 'Bulk ' || n.i),
			r.Version, r.CreatedDate, r.LastModifiedDate FROM hubsync_record r, n WHERE r.ObjectType = 'contacts' AND r.Id = ?`
	case store.MySQL:
		const digits = "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
		q = cols + `SELECT r.ObjectType, CONCAT('bulk-', n.i), JSON_OBJECT('email', CONCAT('bulk', n.i, '@example.com'), 'name', CONCAT('Bulk ', n.i)),
			r.Version, r.CreatedDate, r.LastModifiedDate
			FROM hubsync_record r, (SELECT a.d + 10*b.d + 100*c.d + 1000*e.d + 10000*f.d + 1 AS i
				FROM ` + digits + ` a, ` + digits + ` b, ` + digits + ` c, ` + digits + ` e, ` + digits + ` f) n
			WHERE n.i <= ? AND r.ObjectType = 'contacts' AND r.Id = ?`
	}
	if _, err := bu.st.DB().ExecContext(ctx, dialectsql.Rebind(bu.d, q), n-1, first.ID); err != nil {
		tb.Fatal(err)
	}
	if got := bu.count(tb, "hubsync_record"); got != n {
		tb.Fatalf("stored %d contacts; want %d", got, n)
	}
	ext := "'ext-' || r.Id"
	if bu.d == store.MySQL {
		ext = "CONCAT('ext-', r.Id)"
	}
	if _, err := bu.st.DB().ExecContext(ctx, `INSERT INTO hubsync_link (Destination, ObjectType, RecordID, ExternalID, CreatedDate, LastModifiedDate)
		SELECT 'hubspot', r.ObjectType, r.Id, `+ext+`, r.CreatedDate, r.LastModifiedDate FROM hubsync_record r`); err != nil {
		tb.Fatal(err)
	}
	if !analyzed {
		return
	}
	// The statistics a server's autovacuum (PostgreSQL) or InnoDB (MySQL)
	// gathers soon after such a load; SQLite gathers none by itself.
	for _, stmt := range map[store.Dialect][]string{
		store.Postgres: {"ANALYZE hubsync_record", "ANALYZE hubsync_link"},
		store.MySQL:    {"ANALYZE TABLE hubsync_record", "ANALYZE TABLE hubsync_link"},
	}[bu.d] {
		if _, err := bu.st.DB().ExecContext(ctx, stmt); err != nil {
			tb.Fatal(err)
		}
	}
}
