package migrate_test

import (
	"context"
	"errors"
	"github.com/hubsync/hubsync/internal/testwait"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/migrate"
	"github.com/hubsync/hubsync/store"
)

func TestUpTwiceIsNoop(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		db := dbtest.New(t, d)
		m, err := migrate.New(db.DB, d)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Check(ctx); !errors.Is(err, migrate.ErrNotMigrated) {
			t.Fatalf("Check before Up = %v, want ErrNotMigrated", err)
		}
		first, err := m.Up(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all, _ := migrate.Migrations(d)
		if len(first) != len(all) {
			t.Fatalf("first Up applied %v, want %d migrations", first, len(all))
		}
		second, err := m.Up(ctx)
		if err != nil || len(second) != 0 {
			t.Fatalf("second Up applied %v, %v; want nothing", second, err)
		}
		if err := m.Check(ctx); err != nil {
			t.Fatalf("Check after Up: %v", err)
		}
	})
}

func TestDatabaseNewerIsRefused(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		db := dbtest.Migrated(t, d)
		ins := "INSERT INTO hubsync_migration (version, name, applied_at) VALUES (9999, 'future', 'x')"
		if _, err := db.DB.Exec(ins); err != nil {
			t.Fatal(err)
		}
		m, _ := migrate.New(db.DB, d)
		if _, err := m.Up(ctx); !errors.Is(err, migrate.ErrDatabaseNewer) {
			t.Fatalf("Up on a newer database = %v, want ErrDatabaseNewer", err)
		}
		if err := m.Check(ctx); !errors.Is(err, migrate.ErrDatabaseNewer) {
			t.Fatalf("Check on a newer database = %v, want ErrDatabaseNewer", err)
		}
	})
}

func TestConcurrentUp(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		db := dbtest.New(t, d)
		errs := make(chan error, 4)
		total := make(chan int, 4)
		for range 4 {
			go func() {
				m, _ := migrate.New(db.DB, d)
				v, err := m.Up(context.Background())
				total <- len(v)
				errs <- err
			}()
		}
		sum := 0
		for range 4 {
			if err := testwait.Recv(t, "a migrator to finish", errs); err != nil {
				t.Error(err)
			}
			sum += testwait.Recv(t, "a migrator's count", total)
		}
		all, _ := migrate.Migrations(d)
		if sum != len(all) {
			t.Fatalf("4 concurrent migrators applied %d migrations in all, want %d", sum, len(all))
		}
	})
}

func TestSplitStatements(t *testing.T) {
	got := migrate.SplitStatements("-- c\nCREATE TABLE a (x INT);\n\n-- only a comment;\nCREATE INDEX i ON a (x);\n")
	if len(got) != 2 || got[0] != "-- c\nCREATE TABLE a (x INT)" || got[1] != "CREATE INDEX i ON a (x)" {
		t.Fatalf("SplitStatements = %q", got)
	}
}

func TestSplitStatementsFunctionBody(t *testing.T) {
	text := "CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n    PERFORM 1;\n    RETURN NULL;\nEND $$;\nCREATE TABLE b (y INT);\n"
	got := migrate.SplitStatements(text)
	want := []string{"CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n    PERFORM 1;\n    RETURN NULL;\nEND $$", "CREATE TABLE b (y INT)"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("SplitStatements = %q, want %q", got, want)
	}
}
