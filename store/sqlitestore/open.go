package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

// BusyTimeoutMillis is how long a SQLite connection waits for the write lock.
const BusyTimeoutMillis = 10000

// MaxOpenConnsDefault bounds SQLite connections. SQLite admits one writer at a
// time whatever the pool size; a few connections let readers run beside the
// writer (WAL) and keep an application transaction from starving the store,
// while writers wait on the busy timeout instead of piling up. An in-memory
// database gets one connection, as each connection would be a separate
// database.
const MaxOpenConnsDefault = 4

// CacheSizeKiB is the page cache of each SQLite connection. SQLite's default
// of 2 MiB holds little of a store's indexes once the queue holds a few
// hundred thousand events, and every page it misses is a system call: with
// 16 MiB the receiver stores about a fifth more events per second under load
// (BENCHMARKS.md). The pool's connections then use at most 64 MiB together; a
// URL's own _pragma=cache_size(...) overrides it.
const CacheSizeKiB = 16384

// ParseURL turns a sqlite:PATH URL (also sqlite://PATH, sqlite::memory:) into
// the driver's DSN, with WAL, a busy timeout, foreign keys, a page cache of
// CacheSizeKiB and immediate transactions (one writer at a time, without lock
// upgrades that fail with SQLITE_BUSY). Query parameters of the URL are passed
// on to the driver; a _pragma among them replaces the default of that name.
func ParseURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	rest, ok := strings.CutPrefix(raw, "sqlite:")
	if !ok {
		return "", fmt.Errorf("%w: %q is not a sqlite: URL", store.ErrDatabaseURL, raw)
	}
	path := strings.TrimPrefix(rest, "//")
	if path == "" {
		return "", fmt.Errorf("%w: %q names no file; use sqlite:PATH, e.g. sqlite:hubsync.db", store.ErrDatabaseURL, raw)
	}
	query := ""
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path, query = path[:i], path[i+1:]
	}
	own := map[string]bool{} // pragmas the URL sets itself
	if q, err := url.ParseQuery(query); err == nil {
		for _, v := range q["_pragma"] {
			name, _, _ := strings.Cut(v, "(")
			name, _, _ = strings.Cut(name, "=")
			own[strings.ToLower(strings.TrimSpace(name))] = true
		}
	}
	var params []string
	for _, p := range []struct{ name, value string }{
		{"busy_timeout", fmt.Sprint(BusyTimeoutMillis)}, {"journal_mode", "WAL"}, {"foreign_keys", "1"},
		{"synchronous", "NORMAL"}, {"cache_size", fmt.Sprint(-CacheSizeKiB)},
	} {
		if !own[p.name] {
			params = append(params, "_pragma="+p.name+"("+p.value+")")
		}
	}
	params = append(params, "_txlock=immediate")
	if query != "" {
		params = append(params, query)
	}
	return "file:" + path + "?" + strings.Join(params, "&"), nil
}

// OpenDB opens the database of a sqlite: URL, sizes its pool and checks that
// it answers.
func OpenDB(ctx context.Context, rawURL string) (*sql.DB, error) {
	dsn, err := ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	// SQLite makes the file, not its directory: say which is missing rather
	// than the driver's "unable to open database file".
	if path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?"); path != "" && !strings.Contains(dsn, ":memory:") && !strings.Contains(dsn, "mode=memory") {
		if dir := filepath.Dir(path); dir != "." {
			switch fi, err := os.Stat(dir); {
			case errors.Is(err, fs.ErrNotExist):
				return nil, fmt.Errorf("open database: %w: the directory %s of %q does not exist; create it, or give a path in an existing directory", store.ErrDatabaseURL, dir, strings.TrimSpace(rawURL))
			case err == nil && !fi.IsDir():
				return nil, fmt.Errorf("open database: %w: %s in %q is a file, not a directory; give the path of the database file itself", store.ErrDatabaseURL, dir, strings.TrimSpace(rawURL))
			}
		}
	}
	return dialectsql.OpenDB(ctx, store.SQLite, DriverName, dsn, func(db *sql.DB) {
		n := MaxOpenConnsDefault
		if strings.Contains(dsn, ":memory:") || strings.Contains(dsn, "mode=memory") {
			n = 1
		}
		db.SetMaxOpenConns(n)
		db.SetMaxIdleConns(n)
		db.SetConnMaxLifetime(0) // a SQLite connection holds no server resources
	})
}

// Open opens the database of a sqlite: URL (OpenDB) and returns its store. It
// does not migrate. Closing the store's DB closes the database.
func Open(ctx context.Context, rawURL string, cfg store.Config) (*Store, error) {
	db, err := OpenDB(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	s, err := New(db, cfg)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s store: %w", store.SQLite, err)
	}
	return s, nil
}
