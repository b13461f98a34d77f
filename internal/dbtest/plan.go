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

// RefreshStatistics makes the statements after it plan with the tables as
// they are now: ReopenTables on MySQL/MariaDB (whose frozen statistics stay
// frozen: FreezeEmptyStatistics), ANALYZE of each table on PostgreSQL and
// ANALYZE on SQLite.
func RefreshStatistics(t testing.TB, db *sql.DB, d store.Dialect, tables ...string) {
	t.Helper()
	var stmts []string
	switch d {
	case store.MySQL:
		ReopenTables(t, db, tables...)
	case store.Postgres:
		for _, tb := range tables {
			stmts = append(stmts, "ANALYZE "+tb)
		}
	default:
		stmts = []string{"ANALYZE"}
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("dbtest.RefreshStatistics: %s: %v", q, err)
		}
	}
}

// Explain returns the plan of query with args on a database of dialect d, one
// line per plan row with its columns joined by " | ": EXPLAIN QUERY PLAN on
// SQLite, EXPLAIN elsewhere. It runs in a transaction that is rolled back (see
// ExplainMySQL).
func Explain(t testing.TB, db *sql.DB, d store.Dialect, query string, args ...any) string {
	t.Helper()
	var rows [][]string
	switch d {
	case store.MySQL:
		rows = ExplainMySQL(t, db, query, args...)
	case store.SQLite:
		_, rows = explain(t, db, "EXPLAIN QUERY PLAN "+query, args...)
	default:
		_, rows = explain(t, db, "EXPLAIN "+query, args...)
	}
	return joinPlan(rows)
}

// ExplainMySQL returns MySQL/MariaDB's EXPLAIN of query with args, one row per
// table read, each with the columns id, select_type, table, type,
// possible_keys, key, key_len, ref, rows and Extra, and logs it. It runs in a
// transaction that is rolled back: EXPLAIN of a locking read or of an UPDATE
// takes locks on MySQL.
func ExplainMySQL(t testing.TB, db *sql.DB, query string, args ...any) [][]string {
	t.Helper()
	cols, out := explain(t, db, "EXPLAIN "+query, args...)
	if len(cols) < 10 {
		t.Fatalf("dbtest.ExplainMySQL: EXPLAIN returned columns %q, want id … Extra", cols)
	}
	t.Logf("plan (id | select_type | table | type | possible_keys | key | key_len | ref | rows | Extra):\n%s", joinPlan(out))
	return out
}

// explain runs stmt, an EXPLAIN, in a transaction that it rolls back, and
// returns its columns and rows, NULLs as "".
func explain(t testing.TB, db *sql.DB, stmt string, args ...any) (cols []string, out [][]string) {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	rows, err := tx.Query(stmt, args...)
	if err != nil {
		t.Fatalf("dbtest: %v\n%s", err, stmt)
	}
	defer rows.Close()
	if cols, err = rows.Columns(); err != nil {
		t.Fatal(err)
	}
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
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return cols, out
}

// joinPlan is rows as text: one line per row, columns joined by " | ".
func joinPlan(rows [][]string) string {
	lines := make([]string, len(rows))
	for i, row := range rows {
		lines[i] = strings.Join(row, " | ")
	}
	return strings.Join(lines, "\n")
}
