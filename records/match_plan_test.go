package records

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

// TestMatchByEmailReadsTheIndex: matching a HubSpot contact to an unlinked
// local record by email reads the email's index (migration 026), not every
// contact, on every database, before and after the table's statistics exist:
// without it each HubSpot creation costs time in proportion to the contacts
// stored (BenchmarkApplyMatchByEmail).
func TestMatchByEmailReadsTheIndex(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		bulkContacts(t, b, 2_000)
		mine, err := b.svc.Insert(context.Background(), "contacts", map[string]any{"email": "mine@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		q, err := dialectsql.Load(sqlFS, "sql", d)
		if err != nil {
			t.Fatal(err)
		}
		query := q.Get("record_find_unlinked_email")
		args := []any{"contacts", "mine@example.com", "hubspot"}
		if d == store.MySQL {
			args = []any{"hubspot", "contacts", "mine@example.com", "mine@example.com"}
		}
		analyzed := false
		check := func(when string) {
			t.Helper()
			plan := explain(t, b.st.DB(), d, query, args...)
			if !strings.Contains(plan, "idx_hubsync_record_email") {
				t.Fatalf("%s, the match by email does not read idx_hubsync_record_email:\n%s", when, plan)
			}
			// PostgreSQL, before hubsync_link has statistics, costs a probe
			// by (Destination, ObjectType) as one by the whole key, and may
			// take either.
			if link := linkKey[d]; (d != store.Postgres || analyzed) && !strings.Contains(plan, link) {
				t.Fatalf("%s, the match by email does not probe each candidate's link by %s:\n%s", when, link, plan)
			}
			var id string
			if err := b.st.DB().QueryRowContext(context.Background(), query, args...).Scan(&id); err != nil || id != mine.ID {
				t.Fatalf("%s, the match by email found %q, %v; want the unlinked %s", when, id, err, mine.ID)
			}
		}
		check("without statistics")
		analyze := map[store.Dialect][]string{
			store.SQLite:   {"ANALYZE"},
			store.Postgres: {"ANALYZE hubsync_record", "ANALYZE hubsync_link"},
			store.MySQL:    {"ANALYZE TABLE hubsync_record", "ANALYZE TABLE hubsync_link"},
		}[d]
		for _, stmt := range analyze {
			if _, err := b.st.DB().Exec(stmt); err != nil {
				t.Fatal(err)
			}
		}
		analyzed = true
		check("with statistics")
	})
}

// linkKey is how each database's plan names a probe of hubsync_link by its
// primary key (Destination, ObjectType, RecordID).
var linkKey = map[store.Dialect]string{
	store.SQLite:   "sqlite_autoindex_hubsync_link_1 (Destination=? AND ObjectType=? AND RecordID=?)",
	store.Postgres: "hubsync_link_pkey",
	store.MySQL:    "eq_ref PRIMARY,idx_hubsync_link_external PRIMARY",
}

// explain returns the database's plan of query as text.
func explain(t *testing.T, db *sql.DB, d store.Dialect, query string, args ...any) string {
	t.Helper()
	if d == store.MySQL {
		var lines []string
		for _, row := range dbtest.ExplainMySQL(t, db, query, args...) {
			lines = append(lines, strings.Join(row, " "))
		}
		return strings.Join(lines, "\n")
	}
	prefix := "EXPLAIN "
	if d == store.SQLite {
		prefix = "EXPLAIN QUERY PLAN "
	}
	rows, err := db.Query(prefix+query, args...)
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, query)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, vals[len(vals)-1].String)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
