package links_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/store"
)

// planNode is the part of a node of EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
// that the plan tests read.
type planNode struct {
	NodeType      string     `json:"Node Type"`
	Relation      string     `json:"Relation Name"`
	Index         string     `json:"Index Name"`
	IndexCond     string     `json:"Index Cond"`
	ActualRows    float64    `json:"Actual Rows"`
	ActualLoops   float64    `json:"Actual Loops"`
	RemovedFilter float64    `json:"Rows Removed by Filter"`
	RemovedIndex  float64    `json:"Rows Removed by Index Recheck"`
	SharedHit     int64      `json:"Shared Hit Blocks"`
	SharedRead    int64      `json:"Shared Read Blocks"`
	Plans         []planNode `json:"Plans"`
}

// walk calls f for n and every node under it.
func (n planNode) walk(f func(planNode)) {
	f(n)
	for _, c := range n.Plans {
		c.walk(f)
	}
}

// shape renders the plan's node types, relations and indexes, one node per
// line, indented by depth: what the planner chose, without its estimates.
func (n planNode) shape() string {
	var b strings.Builder
	var rec func(planNode, int)
	rec = func(c planNode, depth int) {
		fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", depth), c.NodeType)
		for _, s := range []string{c.Relation, c.Index} {
			if s != "" {
				fmt.Fprintf(&b, " %s", s)
			}
		}
		b.WriteString("\n")
		for _, k := range c.Plans {
			rec(k, depth+1)
		}
	}
	rec(n, 0)
	return b.String()
}

// manyLookup is one of the per-cycle lookups of many ids, the table it reads,
// the index it must probe once per id and that index's id column.
type manyLookup struct {
	query, table, index, column string
	ids                         func(present, absent int) []string
}

var manyLookups = []manyLookup{
	{"lookup_many", "hubsync_link", "hubsync_link_pkey", "recordid", recordIDs},
	{"link_check_many", "hubsync_link", "hubsync_link_pkey", "recordid", recordIDs},
	{"lookup_records_many", "hubsync_link", "idx_hubsync_link_external", "externalid", externalIDs},
	{"lookup_pushed_many", "hubsync_pushed", "hubsync_pushed_pkey", "recordid", recordIDs},
	{"lookup_owed_many", "hubsync_owed", "hubsync_owed_pkey", "recordid", recordIDs},
}

// keyStatement is one of the statements that read or write the row of one
// id: the table, the index it must probe, that index's id column, and its
// arguments (an id that is there).
type keyStatement struct {
	query, table, index, column string
	args                        []any
	returns                     float64
}

// keyStatements are the lookups of one link. Without statistics PostgreSQL
// read every link of the object type for Lookup, through the external-id
// index. (The UPDATE and DELETEs of one link, relink and unlink, still may:
// they keep their plain WHERE, as a probe by ctid would not follow a
// concurrent update of the row the way the plain WHERE does. Link runs the
// UPDATE only for a record linked to another id, a merge:
// TestLinkReadsFewRowsWithoutStatistics.)
var keyStatements = []keyStatement{
	{"lookup", "hubsync_link", "hubsync_link_pkey", "recordid", []any{"hubspot", "contacts", "r000010"}, 1},
	{"lookup_record", "hubsync_link", "idx_hubsync_link_external", "externalid", []any{"hubspot", "contacts", "e000010"}, 1},
}

// planRows is how many rows of each (Destination, ObjectType) the plan tests
// load: the size at which issue 16's outbound bench saw the link lookups read
// every row of the object type.
const planRows = 20000

// recordIDs are present ids spread over the whole key range of the loaded
// rows, then absent ones: between two present ids, before the first and after
// the last.
func recordIDs(present, absent int) []string {
	var ids []string
	for i := range present {
		ids = append(ids, fmt.Sprintf("r%06d", 1+i*(planRows/present)))
	}
	for i := range absent {
		switch i % 3 {
		case 0:
			ids = append(ids, fmt.Sprintf("r%06dx", 1+i*(planRows/absent)))
		case 1:
			ids = append(ids, fmt.Sprintf("a%06d", i))
		default:
			ids = append(ids, fmt.Sprintf("z%06d", i))
		}
	}
	return ids
}

// externalIDs are recordIDs' external ids (the fixture links r… to e…).
func externalIDs(present, absent int) []string {
	ids := recordIDs(present, absent)
	for i, id := range ids {
		if strings.HasPrefix(id, "r") {
			ids[i] = "e" + id[1:]
		}
	}
	return ids
}

// fillQuickly loads planRows links, pushed states and owed fields for
// hubspot/contacts, and a tenth of that for hubspot/companies, with the
// database's automatic statistics off for these tables (PostgreSQL's
// autovacuum, InnoDB's recalculation): a fresh table filled faster than
// statistics are taken.
func fillQuickly(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	d, db := st.Dialect(), st.DB()
	tables := []string{"hubsync_link", "hubsync_pushed", "hubsync_owed"}
	for _, table := range tables {
		var off string
		switch d {
		case store.Postgres:
			off = `ALTER TABLE ` + table + ` SET (autovacuum_enabled = false)`
		case store.MySQL:
			off = `ALTER TABLE ` + table + ` STATS_AUTO_RECALC = 0`
		default:
			continue // SQLite has statistics only after ANALYZE
		}
		if _, err := db.ExecContext(ctx, off); err != nil {
			t.Fatal(err)
		}
	}
	now := dialectsql.Time(d, st.Now())
	rows := map[string]func(rec, ext string) []any{
		"hubsync_link (Destination, ObjectType, RecordID, ExternalID, CreatedDate, LastModifiedDate)": func(rec, ext string) []any {
			return []any{rec, ext, now, now}
		},
		"hubsync_pushed (Destination, ObjectType, RecordID, ExternalID, Version, Fields, Deleted, EventDate, LastModifiedDate, Seq)": func(rec, ext string) []any {
			return []any{rec, ext, 1, `{"email":"` + rec + `@example.com","firstname":"Ann"}`, false, now, now, 1}
		},
		"hubsync_owed (Destination, ObjectType, RecordID, Fields, LastModifiedDate)": func(rec, ext string) []any {
			return []any{rec, `["email"]`, now}
		},
	}
	const batch = 500
	for _, group := range []struct {
		objectType string
		n          int
	}{{"contacts", planRows}, {"companies", planRows / 10}} {
		for into, row := range rows {
			for from := 1; from <= group.n; from += batch {
				var values []string
				var args []any
				for i := from; i < from+batch && i <= group.n; i++ {
					r := append([]any{"hubspot", group.objectType}, row(fmt.Sprintf("r%06d", i), fmt.Sprintf("e%06d", i))...)
					values = append(values, "("+strings.TrimSuffix(strings.Repeat("?, ", len(r)), ", ")+")")
					args = append(args, r...)
				}
				q := dialectsql.Rebind(d, "INSERT INTO "+into+" VALUES "+strings.Join(values, ", "))
				if _, err := db.ExecContext(ctx, q, args...); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func analyzeLinks(t *testing.T, db *sql.DB) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), `ANALYZE hubsync_link, hubsync_pushed, hubsync_owed`); err != nil {
		t.Fatal(err)
	}
}

// statisticsRows counts the planner statistics PostgreSQL holds for a table
// of the test's schema (pg_statistic, one row per analysed column).
func statisticsRows(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM pg_statistic s JOIN pg_class c ON c.oid = s.starelid
		WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`, table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// explainAnalyze runs query under EXPLAIN (ANALYZE, BUFFERS) in a
// transaction that is rolled back, as a custom plan
// (the parameters' values known) or as the generic plan that a prepared
// statement may switch to after a few executions.
func explainAnalyze(t *testing.T, db *sql.DB, query string, generic bool, args ...any) planNode {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // the writes are undone
	var doc []byte
	if generic {
		if _, err := tx.ExecContext(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `PREPARE probe AS `+query); err != nil {
			t.Fatal(err)
		}
		defer tx.ExecContext(ctx, `DEALLOCATE probe`) //nolint:errcheck // a prepared statement outlives a rollback
		// EXECUTE takes no bind parameters: its arguments are literals.
		lits := make([]string, len(args))
		for i, a := range args {
			lits[i] = "'" + strings.ReplaceAll(fmt.Sprint(a), "'", "''") + "'"
		}
		err = tx.QueryRowContext(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE probe(`+strings.Join(lits, ", ")+`)`).Scan(&doc)
	} else {
		err = tx.QueryRowContext(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+query, args...).Scan(&doc)
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(doc, &out); err != nil || len(out) != 1 {
		t.Fatalf("explain: %v (%d plans)", err, len(out))
	}
	return out[0].Plan
}

// TestLinkStatementsProbePerID holds every per-cycle lookup of many ids, and
// the lookups of one link, on PostgreSQL to one probe of its index per id,
// whatever the statistics: issue 16's outbound cycles spent most of their
// time in lookups that, on a link table filled faster than it was analysed,
// read every row of the object type to find 100 (54 ms each). Each lookup of
// 100 ids (90 present), and each lookup of one id, runs on 20,000 rows of
// one object type with no statistics, with statistics taken while the tables
// were empty, and with fresh ones, as a custom and as a generic plan. Each
// must reach its table by a probe of its index with the id in the condition,
// read at most a few rows per id, and
// keep one plan shape throughout. It measures reads (EXPLAIN ANALYZE), never
// time.
func TestLinkStatementsProbePerID(t *testing.T) {
	const present, absent = 90, 10
	type planCase struct {
		keyStatement
		ids int // the ids the statement looks up
	}
	var cases []planCase
	for _, lk := range manyLookups {
		ids, err := json.Marshal(lk.ids(present, absent))
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, planCase{keyStatement{lk.query, lk.table, lk.index, lk.column,
			[]any{"hubspot", "contacts", string(ids)}, present}, present + absent})
	}
	for _, ks := range keyStatements {
		cases = append(cases, planCase{ks, 1})
	}
	// The states of the statistics, in order: a store filled quickly (none),
	// then analysed (fresh); and one analysed while empty, then filled.
	filled := newStore(t, store.Postgres)
	fillQuickly(t, filled)
	for _, table := range []string{"hubsync_link", "hubsync_pushed", "hubsync_owed"} {
		if n := statisticsRows(t, filled.DB(), table); n != 0 {
			t.Fatalf("fixture: %s has %d statistics rows, want none", table, n)
		}
	}
	takenEmpty := newStore(t, store.Postgres)
	analyzeLinks(t, takenEmpty.DB())
	fillQuickly(t, takenEmpty)
	states := []struct {
		name   string
		s      store.Store
		before func(t *testing.T, db *sql.DB)
	}{
		{"none", filled, nil},
		{"taken-empty", takenEmpty, nil},
		{"fresh", filled, analyzeLinks},
	}
	shapes := map[string]string{}
	for _, st := range states {
		s, db := st.s, st.s.DB()
		if st.before != nil {
			st.before(t, db)
		}
		l := links.New(s)
		for _, c := range cases {
			for _, generic := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/custom", st.name, c.query)
				if generic {
					name = fmt.Sprintf("%s/%s/generic", st.name, c.query)
				}
				t.Run(name, func(t *testing.T) {
					plan := explainAnalyze(t, db, l.Query(c.query), generic, c.args...)
					var read float64
					probes := 0
					plan.walk(func(n planNode) {
						if n.Relation != c.table {
							return
						}
						// Actual Rows and Rows Removed are averages over the
						// node's loops.
						read += (n.ActualRows + n.RemovedFilter + n.RemovedIndex) * n.ActualLoops
						if n.Index != c.index || !strings.HasPrefix(n.NodeType, "Index") || !strings.Contains(n.IndexCond, c.column) {
							t.Errorf("%s on %s (index %q, condition %q): not a probe of %s by %s", n.NodeType, n.Relation, n.Index, n.IndexCond, c.index, c.column)
						}
						probes++
					})
					buffers := plan.SharedHit + plan.SharedRead
					t.Logf("returned %.0f rows, read %.0f rows of %s, %d buffers; plan:\n%s", plan.ActualRows, read, c.table, buffers, plan.shape())
					if plan.ActualRows != c.returns {
						t.Errorf("returned %.0f rows, want %.0f", plan.ActualRows, c.returns)
					}
					if probes == 0 {
						t.Errorf("the plan does not probe %s", c.index)
					}
					// One row per probe (the id, or the next key when the id
					// is absent); never the object type's 20,000.
					if read > float64(2*c.ids) {
						t.Errorf("read %.0f rows of %s for %d ids: the statement's cost depends on the table, not the ids", read, c.table, c.ids)
					}
					// A probe is an index descent and a heap page: a few
					// buffers, never the table's pages.
					if buffers > int64(10*c.ids)+10 {
						t.Errorf("touched %d buffers for %d ids, want at most %d", buffers, c.ids, 10*c.ids+10)
					}
					if first, ok := shapes[c.query]; !ok {
						shapes[c.query] = plan.shape()
					} else if plan.shape() != first {
						t.Errorf("plan shape differs from the first one's:\n%s\nwant:\n%s", plan.shape(), first)
					}
				})
			}
		}
	}
}

// TestLinkReadsFewRowsWithoutStatistics holds Link on PostgreSQL, for the
// link every creation writes (a record with none yet), to a few rows read of
// hubsync_link, on 20,000 links of the object type with no statistics. The
// re-link's UPDATE, which Link tried first for every record, read all 20,000
// through the external-id index (14 ms a creation at 100,000 contacts); it
// now runs only for a record linked to another id (a merge), and may still
// read them all then. It counts the rows the transaction's scans returned
// (pg_stat_xact_user_tables), never time.
func TestLinkReadsFewRowsWithoutStatistics(t *testing.T) {
	s := newStore(t, store.Postgres)
	fillQuickly(t, s)
	if n := statisticsRows(t, s.DB(), "hubsync_link"); n != 0 {
		t.Fatalf("fixture: hubsync_link has %d statistics rows, want none", n)
	}
	l := links.New(s)
	ctx := context.Background()
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // the link is undone
	// read is what this transaction's scans of hubsync_link returned so
	// far: rows read by sequential scans and fetched by index scans.
	read := func() int64 {
		var n int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(seq_tup_read + idx_tup_fetch), 0) FROM pg_stat_xact_user_tables
			WHERE relname = 'hubsync_link' AND schemaname = current_schema()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := read()
	if err := l.LinkTx(ctx, tx, "hubspot", "contacts", "r999999", "e999999"); err != nil {
		t.Fatal(err)
	}
	if got := read() - before; got > 10 {
		t.Errorf("linking a record with no link read %d rows of hubsync_link, want at most 10 (a probe per lookup)", got)
	}
	if ext, ok, err := l.LookupTx(ctx, tx, "hubspot", "contacts", "r999999"); err != nil || !ok || ext != "e999999" {
		t.Fatalf("after Link: %q, %v, %v; want e999999", ext, ok, err)
	}
}

// explainRows runs EXPLAIN (EXPLAIN QUERY PLAN on SQLite) of query and returns
// its rows as column name → value.
func explainRows(t *testing.T, st store.Store, query string, args ...any) []map[string]string {
	t.Helper()
	prefix := "EXPLAIN "
	if st.Dialect() == store.SQLite {
		prefix = "EXPLAIN QUERY PLAN "
	}
	rows, err := st.DB().QueryContext(context.Background(), prefix+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := map[string]string{}
		for i, c := range cols {
			row[c] = vals[i].String
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestManyLookupsPlanMySQLSQLite checks the same lookups on MySQL/MariaDB and
// SQLite, before and after statistics are taken: each must reach its table by
// the whole key, one row per id (eq_ref on MySQL; a SEARCH whose condition
// names the id column on SQLite), never by a scan of the table or of the
// (Destination, ObjectType) prefix.
func TestManyLookupsPlanMySQLSQLite(t *testing.T) {
	for _, d := range []store.Dialect{store.MySQL, store.SQLite} {
		t.Run(string(d), func(t *testing.T) {
			s := newStore(t, d)
			fillQuickly(t, s)
			l := links.New(s)
			ids := func(lk manyLookup) string {
				b, err := json.Marshal(lk.ids(90, 10))
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			for _, stats := range []string{"none", "analysed"} {
				if stats == "analysed" {
					q := "ANALYZE TABLE hubsync_link, hubsync_pushed, hubsync_owed"
					if d == store.SQLite {
						q = "ANALYZE"
					}
					if _, err := s.DB().Exec(q); err != nil {
						t.Fatal(err)
					}
				}
				for _, lk := range manyLookups {
					t.Run(stats+"/"+lk.query, func(t *testing.T) {
						plan := explainRows(t, s, l.Query(lk.query), "hubspot", "contacts", ids(lk))
						var lines []string
						reached := false
						for _, row := range plan {
							lines = append(lines, fmt.Sprint(row))
							if d == store.MySQL {
								if row["table"] != lk.table {
									continue
								}
								reached = true
								if row["type"] != "eq_ref" {
									t.Errorf("%s is read by %s (key %s, ref %s), want eq_ref: one row by the whole key per id", lk.table, row["type"], row["key"], row["ref"])
								}
								continue
							}
							detail := row["detail"]
							if !strings.Contains(detail, " "+lk.table+" ") && !strings.HasSuffix(detail, " "+lk.table) {
								continue
							}
							reached = true
							if !strings.HasPrefix(detail, "SEARCH ") || !strings.Contains(strings.ToLower(detail), lk.column+"=?") {
								t.Errorf("%q: not a search of %s by the whole key", detail, lk.table)
							}
						}
						t.Logf("plan:\n%s", strings.Join(lines, "\n"))
						if !reached {
							t.Errorf("the plan does not read %s", lk.table)
						}
					})
				}
			}
		})
	}
}
