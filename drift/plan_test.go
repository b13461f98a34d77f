package drift

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/storetest"
)

// TestMySQLDriftPlansWithStaleStatistics checks that the MySQL statements
// the drift scan runs once per page of records (open_outbound, open_inbound,
// clocks) probe their table by each asked id, whatever the statistics say.
// With the statistics of the empty tables, kept while 20,000 events of 7,000
// records and their field clocks were filled (InnoDB recomputes them in the
// background, after 10 % of the rows changed), MariaDB ran each IN as a
// semi-join that read every row of the object type, history included, and
// looked each up in the asked ids: a read of the whole table per page.
func TestMySQLDriftPlansWithStaleStatistics(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	db := dbtest.Migrated(t, store.MySQL)
	st, err := hubsync.NewStore(db.DB, store.MySQL, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.DB.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tables := []string{"_System_IntegrationOutbound", "_System_IntegrationInbound", "hubsync_field_clock"}
	dbtest.FreezeEmptyStatistics(t, db.DB, tables...)
	if err := storetest.FillOutboundRecords(ctx, st, "hubspot", "h", 20000, 7000, base); err != nil {
		t.Fatal(err)
	}
	exec(`UPDATE _System_IntegrationOutbound SET Status = 'processed', ProcessedDate = CreatedDate WHERE Id < 'h0000010000'`)
	exec(`INSERT INTO _System_IntegrationInbound (Id, Source, ExternalID, ObjectType, EventType, Payload, IdempotencyKey,
    Status, CreatedDate, LastModifiedDate, NextAttemptDate, Seq, Lane)
SELECT CONCAT('i', LPAD(s.seq, 10, '0')), 'hubspot', CONCAT('x', (s.seq - 1) % 7000 + 1), 'contacts', 'update', '{}',
    CONCAT('k', s.seq), IF(s.seq < 10000, 'processed', 'pending'), ?, ?, ?, (s.seq - 1) DIV 7000 + 1, (s.seq - 1) DIV 7000 + 1
FROM seq_1_to_20000 AS s`, base, base, base)
	exec(`INSERT INTO hubsync_field_clock (ObjectType, RecordID, Field, OccurredAt)
SELECT 'contacts', CONCAT('h', s.seq), f.Field, ? FROM seq_1_to_7000 AS s
CROSS JOIN (SELECT 'email' AS Field UNION ALL SELECT 'firstname' UNION ALL SELECT 'lastname') AS f`, base)
	dbtest.ReopenTables(t, db.DB, tables...)
	q, err := dialectsql.Load(sqlFS, "sql", store.MySQL)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		query, table, index string
		args                []any
		want                string // the answer, sorted
	}{
		// h12, h13 and h14 have pending events, h9999 none.
		{"open_outbound", "_System_IntegrationOutbound", "idx_outbound_open", []any{"hubspot", "contacts", `["h12","h13","h14","h9999"]`}, "h12,h13,h14"},
		{"open_inbound", "_System_IntegrationInbound", "idx_inbound_open", []any{"hubspot", "contacts", `["x12","x13","x14","x9999"]`}, "x12,x13,x14"},
		{"clocks", "hubsync_field_clock", "PRIMARY", []any{"contacts", `["h12","h9999"]`}, "h12 email,h12 firstname,h12 lastname"},
	} {
		t.Run(c.query, func(t *testing.T) {
			aliases := map[string]bool{c.table: true}
			if i := strings.Index(q.Get(c.query), c.table+" "); i >= 0 {
				if f := strings.Fields(q.Get(c.query)[i+len(c.table):]); len(f) > 0 {
					aliases[f[0]] = true // the alias of the table, if any
				}
			}
			var reads int
			for _, cols := range dbtest.ExplainMySQL(t, db.DB, q.Get(c.query), c.args...) {
				if !aliases[cols[2]] {
					continue
				}
				reads++
				if cols[5] != c.index || !strings.Contains(cols[7], ".id") {
					t.Errorf("%s reads %s through %q by %q, not %s by each asked id: %s", c.query, c.table, cols[5], cols[7], c.index, strings.Join(cols, " | "))
				}
			}
			if reads == 0 {
				t.Errorf("no read of %s in the plan of %s", c.table, c.query)
			}
			rows, err := db.DB.QueryContext(ctx, q.Get(c.query), c.args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			n, err := rows.Columns()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for rows.Next() {
				vals := make([]sql.NullString, len(n))
				ptrs := make([]any, len(n))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				row := vals[0].String
				if len(vals) > 2 {
					row += " " + vals[1].String
				}
				got = append(got, row)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if strings.Join(got, ",") != c.want {
				t.Errorf("%s = %v, want %s", c.query, got, c.want)
			}
		})
	}
}
