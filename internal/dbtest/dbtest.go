// Package dbtest gives tests an isolated, real database of each dialect: a
// temporary SQLite file, a fresh PostgreSQL schema, or a fresh MySQL/MariaDB
// database, dropped when the test ends.
//
// PostgreSQL and MySQL are found at HUBSYNC_TEST_POSTGRES_URL (default
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable) and
// HUBSYNC_TEST_MYSQL_URL (default mysql://root@127.0.0.1:3306/test). When one is
// unreachable its tests are skipped, unless CI is set: then they fail, so a CI run
// can never pass by skipping them.
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/migrate"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/pgstore"
)

// Defaults for the shared test databases.
const (
	PostgresURLDefault = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	MySQLURLDefault    = "mysql://root@127.0.0.1:3306/test"
)

// Dialects lists every dialect, for table-driven tests.
var Dialects = []store.Dialect{store.SQLite, store.Postgres, store.MySQL}

// DB is an isolated test database.
type DB struct {
	Dialect store.Dialect
	// URL opens this same database (a HUBSYNC_DATABASE_URL), e.g. for a subprocess.
	URL string
	DB  *sql.DB
}

// PostgresURL is the shared PostgreSQL server's URL.
func PostgresURL() string { return envOr("HUBSYNC_TEST_POSTGRES_URL", PostgresURLDefault) }

// MySQLURL is the shared MySQL/MariaDB server's URL.
func MySQLURL() string { return envOr("HUBSYNC_TEST_MYSQL_URL", MySQLURLDefault) }

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// New returns an empty isolated database of the dialect (no migrations applied).
func New(t testing.TB, d store.Dialect) *DB {
	t.Helper()
	switch d {
	case store.SQLite:
		return newSQLite(t)
	case store.Postgres:
		return newPostgres(t)
	case store.MySQL:
		return newMySQL(t)
	}
	t.Fatalf("dbtest: unknown dialect %q", d)
	return nil
}

// Migrated returns an isolated database of the dialect with every migration applied.
func Migrated(t testing.TB, d store.Dialect) *DB {
	t.Helper()
	db := New(t, d)
	m, err := migrate.New(db.DB, d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(context.Background()); err != nil {
		t.Fatalf("dbtest: migrate %s: %v", d, err)
	}
	return db
}

// Open opens a HUBSYNC_DATABASE_URL with its backend's driver and DSN
// (hubsync.ParseDatabaseURL) and closes it when the test ends. Unlike
// hubsync.Open it leaves the pool unbounded and does not ping.
func Open(t testing.TB, rawURL string) *sql.DB {
	t.Helper()
	u, err := hubsync.ParseDatabaseURL(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open(u.Driver, u.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newSQLite(t testing.TB) *DB {
	rawURL := "sqlite:" + filepath.Join(t.TempDir(), "test.db")
	return &DB{Dialect: store.SQLite, URL: rawURL, DB: Open(t, rawURL)}
}

func randomName(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// unavailable skips the test, or fails it when CI is set.
func unavailable(t testing.TB, what string, err error) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("dbtest: %s is unreachable and CI is set, so this is a failure, not a skip: %v", what, err)
	}
	t.Skipf("dbtest: %s is unreachable, skipping (set CI=1 to make this fail): %v", what, err)
}

var reachable sync.Map // server URL -> error (nil when reachable)

func ping(driver, dsn string) error {
	if v, ok := reachable.Load(dsn); ok {
		if v == nil {
			return nil
		}
		return v.(error)
	}
	db, err := sql.Open(driver, dsn)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = db.PingContext(ctx)
		cancel()
		db.Close()
	}
	if err != nil {
		reachable.Store(dsn, err)
	} else {
		reachable.Store(dsn, nil)
	}
	return err
}

func newPostgres(t testing.TB) *DB {
	t.Helper()
	admin := PostgresURL()
	if err := ping(pgstore.DriverName, admin); err != nil {
		unavailable(t, "PostgreSQL at "+admin, err)
	}
	schema := randomName("hubsync_test_")
	adminDB := Open(t, admin)
	if _, err := adminDB.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("dbtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := adminDB.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Logf("dbtest: drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	rawURL := u.String()
	return &DB{Dialect: store.Postgres, URL: rawURL, DB: Open(t, rawURL)}
}

func newMySQL(t testing.TB) *DB {
	t.Helper()
	admin := MySQLURL()
	pu, err := hubsync.ParseDatabaseURL(admin)
	if err != nil {
		t.Fatal(err)
	}
	if err := ping(pu.Driver, pu.DSN); err != nil {
		unavailable(t, "MySQL/MariaDB at "+admin, err)
	}
	name := randomName("hubsync_test_")
	adminDB := Open(t, admin)
	if _, err := adminDB.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatalf("dbtest: create database: %v", err)
	}
	t.Cleanup(func() {
		if _, err := adminDB.Exec("DROP DATABASE IF EXISTS " + name); err != nil {
			t.Logf("dbtest: drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	rawURL := u.String()
	return &DB{Dialect: store.MySQL, URL: rawURL, DB: Open(t, rawURL)}
}

// Name returns a test-friendly name for a dialect (for t.Run).
func Name(d store.Dialect) string { return strings.ToLower(string(d)) }

// Each runs f as a parallel subtest for every dialect.
func Each(t *testing.T, f func(t *testing.T, d store.Dialect)) {
	for _, d := range Dialects {
		t.Run(Name(d), func(t *testing.T) {
			t.Parallel()
			f(t, d)
		})
	}
}

// FailOnce makes the at-th row written by event ("INSERT" or "UPDATE") on
// table (counting from 1, across transactions) fail as a deadlock would, with
// the database's own deadlock error (PostgreSQL SQLSTATE 40P01, MySQL error
// 1213), and lets every other one through: a trigger counts its firings where
// a rollback cannot undo the count (a sequence; a MyISAM table). It returns
// how many times the trigger fired, so that a test can tell the write was run
// again. SQLite has no deadlocks (it admits one writer), so it is not
// supported.
func FailOnce(t testing.TB, db *sql.DB, d store.Dialect, table, event string, at int) (fired func() int) {
	t.Helper()
	n := strconv.Itoa(at)
	var stmts []string
	var count string
	switch d {
	case store.Postgres:
		stmts = []string{
			`CREATE SEQUENCE hubsync_test_fail_once`,
			`CREATE FUNCTION hubsync_test_fail_once() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF nextval('hubsync_test_fail_once') = ` + n + ` THEN
        RAISE EXCEPTION 'injected deadlock (dbtest.FailOnce)' USING ERRCODE = '40P01';
    END IF;
    RETURN NEW;
END $$`,
			`CREATE TRIGGER hubsync_test_fail_once BEFORE ` + event + ` ON ` + table + ` FOR EACH ROW EXECUTE FUNCTION hubsync_test_fail_once()`,
		}
		count = `SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM hubsync_test_fail_once`
	case store.MySQL:
		stmts = []string{
			`CREATE TABLE hubsync_test_fail_once (n INT NOT NULL) ENGINE = MyISAM`,
			`INSERT INTO hubsync_test_fail_once VALUES (0)`,
			`CREATE TRIGGER hubsync_test_fail_once BEFORE ` + event + ` ON ` + table + ` FOR EACH ROW
BEGIN
    UPDATE hubsync_test_fail_once SET n = n + 1;
    IF (SELECT n FROM hubsync_test_fail_once) = ` + n + ` THEN
        SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, MESSAGE_TEXT = 'injected deadlock (dbtest.FailOnce)';
    END IF;
END`,
		}
		count = `SELECT n FROM hubsync_test_fail_once`
	default:
		t.Fatalf("dbtest.FailOnce: %s has no deadlocks to inject", d)
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("dbtest.FailOnce: %v\n%s", err, q)
		}
	}
	return func() int {
		t.Helper()
		var n int
		if err := db.QueryRow(count).Scan(&n); err != nil {
			t.Fatalf("dbtest.FailOnce: count: %v", err)
		}
		return n
	}
}
