package dbtest

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/store"
)

// FreezeEmptyStatistics gives MySQL/MariaDB tables the statistics of empty
// tables and keeps them (ANALYZE TABLE, then STATS_AUTO_RECALC = 0): call it on
// the empty tables, then fill them and call ReopenTables. It reproduces a table
// that filled up faster than InnoDB recomputes its statistics (in the
// background, after 10 % of the rows changed), with which MariaDB chose plans
// that read a whole table per row of a statement: plan tests check that a
// statement's plan does not depend on the statistics.
func FreezeEmptyStatistics(t testing.TB, db *sql.DB, tables ...string) {
	t.Helper()
	for _, tb := range tables {
		for _, q := range []string{"ANALYZE TABLE " + tb, "ALTER TABLE " + tb + " STATS_AUTO_RECALC = 0"} {
			rows, err := db.Query(q) // ANALYZE TABLE returns a result set
			if err != nil {
				t.Fatalf("dbtest.FreezeEmptyStatistics: %s: %v", q, err)
			}
			rows.Close()
		}
	}
}

// ReopenTables closes the server's open instances of MySQL/MariaDB tables
// (FLUSH TABLES), so that the statements after it plan as a new connection
// does: with the row counts of the tables as they are now and the index
// statistics InnoDB keeps. An instance opened while a table was empty keeps
// planning as if it were.
func ReopenTables(t testing.TB, db *sql.DB, tables ...string) {
	t.Helper()
	for _, tb := range tables {
		if _, err := db.Exec("FLUSH TABLES " + tb); err != nil {
			t.Fatalf("dbtest.ReopenTables: %s: %v", tb, err)
		}
	}
}

// Explain returns the plan of query with args on a database of dialect d, one
// line per plan row with its columns joined by " | ": EXPLAIN QUERY PLAN on
// SQLite, EXPLAIN elsewhere. It runs in a transaction that is rolled back (see
// ExplainMySQL).
func Explain(t testing.TB, db *sql.DB, d store.Dialect, query string, args ...any) string {
	t.Helper()
	if d == store.MySQL {
		var lines []string
		for _, row := range ExplainMySQL(t, db, query, args...) {
			lines = append(lines, strings.Join(row, " | "))
		}
		return strings.Join(lines, "\n")
	}
	prefix := "EXPLAIN "
	if d == store.SQLite {
		prefix = "EXPLAIN QUERY PLAN "
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	rows, err := tx.Query(prefix+query, args...)
	if err != nil {
		t.Fatalf("dbtest.Explain: %v\n%s", err, query)
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
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = v.String
		}
		lines = append(lines, strings.Join(row, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// ExplainMySQL returns MySQL/MariaDB's EXPLAIN of query with args, one row per
// table read, each with the columns id, select_type, table, type,
// possible_keys, key, key_len, ref, rows and Extra, and logs it. It runs in a
// transaction that is rolled back: EXPLAIN of a locking read or of an UPDATE
// takes locks on MySQL.
func ExplainMySQL(t testing.TB, db *sql.DB, query string, args ...any) [][]string {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	rows, err := tx.Query("EXPLAIN "+query, args...)
	if err != nil {
		t.Fatalf("dbtest.ExplainMySQL: %v\n%s", err, query)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	if len(cols) < 10 {
		t.Fatalf("dbtest.ExplainMySQL: EXPLAIN returned columns %q, want id … Extra", cols)
	}
	var out [][]string
	var text []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = v.String
		}
		out = append(out, row)
		text = append(text, strings.Join(row, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("plan (id | select_type | table | type | possible_keys | key | key_len | ref | rows | Extra):\n%s", strings.Join(text, "\n"))
	return out
}
