package migrate_test

import (
	"context"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/migrate"
	"github.com/hubsync/hubsync/store"
)

// TestUpAfterInterruptedMigration: a `hubsync migrate` killed (or its
// connection lost) after the first statement of a migration must leave a
// database that the next `hubsync migrate` brings up to date. PostgreSQL
// and SQLite run a migration in one transaction, so nothing of it stays;
// MySQL/MariaDB commit each DDL statement at once, so what ran stays
// without its version row: the migrator resumes after the statements its
// progress row counts, and the one a stop cut off before its progress row
// counts as done when it fails on what is already there.
func TestUpAfterInterruptedMigration(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		db := dbtest.New(t, d)
		all, err := migrate.Migrations(d)
		if err != nil {
			t.Fatal(err)
		}
		// Apply every migration before 012 as Up would, recording each.
		m, _ := migrate.New(db.DB, d)
		var mg012 migrate.Migration
		for _, mg := range all {
			if mg.Version == 12 {
				mg012 = mg
			}
		}
		if mg012.Version == 0 {
			t.Fatal("no migration 012")
		}
		applyThrough(t, db, d, all, 11)
		// The migrator is stopped after the first statement of 012.
		first := migrate.SplitStatements(mg012.SQL)[0]
		if d == store.MySQL {
			if _, err := db.DB.ExecContext(ctx, first); err != nil {
				t.Fatal(err)
			}
		} // elsewhere the statement's transaction rolls back with the process
		if _, err := m.Up(ctx); err != nil {
			t.Fatalf("Up after a migration stopped after its first statement: %v", err)
		}
		if err := m.Check(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestResumeEachStatementOfAMigration stops a MySQL/MariaDB migration after
// each of its statements, before that statement's progress row (the worst
// moment), and requires the next Up to finish it: 028 drops and re-adds a
// generated column and its index, 012 creates tables and fills them.
func TestResumeEachStatementOfAMigration(t *testing.T) {
	ctx := context.Background()
	all, err := migrate.Migrations(store.MySQL)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int{12, 28} {
		var mg migrate.Migration
		for _, x := range all {
			if x.Version == v {
				mg = x
			}
		}
		stmts := migrate.SplitStatements(mg.SQL)
		for k := range stmts {
			db := dbtest.New(t, store.MySQL)
			applyThrough(t, db, store.MySQL, all, v-1)
			for _, stmt := range stmts[:k+1] {
				if _, err := db.DB.ExecContext(ctx, stmt); err != nil {
					t.Fatal(err)
				}
			}
			if k > 0 {
				if _, err := db.DB.ExecContext(ctx, "CREATE TABLE hubsync_migration_progress (version INT PRIMARY KEY, statements INT NOT NULL)"); err != nil {
					t.Fatal(err)
				}
				if _, err := db.DB.ExecContext(ctx, "INSERT INTO hubsync_migration_progress VALUES (?, ?)", v, k); err != nil {
					t.Fatal(err)
				}
			}
			m, err := migrate.New(db.DB, store.MySQL)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Up(ctx); err != nil {
				t.Fatalf("Up after %03d stopped after statement %d of %d: %v", v, k+1, len(stmts), err)
			}
			if err := m.Check(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func applyThrough(t *testing.T, db *dbtest.DB, d store.Dialect, all []migrate.Migration, last int) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.DB.ExecContext(ctx, "CREATE TABLE hubsync_migration (version INT PRIMARY KEY, name VARCHAR(255) NOT NULL, applied_at VARCHAR(64) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	ins := "INSERT INTO hubsync_migration (version, name, applied_at) VALUES (?, ?, 'x')"
	if d == store.Postgres {
		ins = "INSERT INTO hubsync_migration (version, name, applied_at) VALUES ($1, $2, 'x')"
	}
	for _, mg := range all {
		if mg.Version > last {
			break
		}
		for _, stmt := range migrate.SplitStatements(mg.SQL) {
			if _, err := db.DB.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%03d: %v", mg.Version, err)
			}
		}
		if _, err := db.DB.ExecContext(ctx, ins, mg.Version, mg.Name); err != nil {
			t.Fatal(err)
		}
	}
}
