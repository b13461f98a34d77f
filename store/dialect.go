package store

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Dialect names a supported database.
type Dialect string

// The supported databases.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
	MySQL    Dialect = "mysql"
)

// Driver names registered with database/sql by the backends' drivers.
const (
	DriverSQLite   = "sqlite" // modernc.org/sqlite
	DriverPostgres = "pgx"    // github.com/jackc/pgx/v5/stdlib
	DriverMySQL    = "mysql"  // github.com/go-sql-driver/mysql
)

// SQLiteBusyTimeoutMillis is how long a SQLite connection waits for the write lock.
const SQLiteBusyTimeoutMillis = 10000

// DatabaseURL is a parsed database URL (see ParseDatabaseURL).
type DatabaseURL struct {
	Dialect Dialect
	// Driver is the database/sql driver name to open DSN with.
	Driver string
	// DSN is the driver's data source name.
	DSN string
}

// ErrDatabaseURL is wrapped by every ParseDatabaseURL error.
var ErrDatabaseURL = errors.New("invalid database URL")

// ParseDatabaseURL parses a database URL:
//
//	sqlite:PATH              (also sqlite://PATH, sqlite::memory:)
//	postgres://user@host:port/db?sslmode=disable   (also postgresql://)
//	mysql://user:pass@host:port/db
//
// SQLite gets WAL, a busy timeout, foreign keys and immediate transactions (one
// writer at a time, without lock upgrades that fail with SQLITE_BUSY). MySQL gets
// parseTime, UTC and client-side parameter interpolation.
func ParseDatabaseURL(raw string) (DatabaseURL, error) {
	raw = strings.TrimSpace(raw)
	switch {
	case raw == "":
		return DatabaseURL{}, fmt.Errorf("%w: empty; use sqlite:PATH, postgres://... or mysql://...", ErrDatabaseURL)
	case strings.HasPrefix(raw, "sqlite:"):
		path := strings.TrimPrefix(strings.TrimPrefix(raw, "sqlite:"), "//")
		if path == "" {
			return DatabaseURL{}, fmt.Errorf("%w: %q names no file; use sqlite:PATH, e.g. sqlite:hubsync.db", ErrDatabaseURL, raw)
		}
		query := ""
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path, query = path[:i], path[i+1:]
		}
		params := fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate", SQLiteBusyTimeoutMillis)
		if query != "" {
			params += "&" + query
		}
		return DatabaseURL{Dialect: SQLite, Driver: DriverSQLite, DSN: "file:" + path + "?" + params}, nil
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		if _, err := url.Parse(raw); err != nil {
			return DatabaseURL{}, fmt.Errorf("%w: %v", ErrDatabaseURL, err)
		}
		return DatabaseURL{Dialect: Postgres, Driver: DriverPostgres, DSN: raw}, nil
	case strings.HasPrefix(raw, "mysql://"), strings.HasPrefix(raw, "mariadb://"):
		u, err := url.Parse(raw)
		if err != nil {
			return DatabaseURL{}, fmt.Errorf("%w: %v", ErrDatabaseURL, err)
		}
		db := strings.TrimPrefix(u.Path, "/")
		if db == "" {
			return DatabaseURL{}, fmt.Errorf("%w: %q names no database; use mysql://user:pass@host:3306/DBNAME", ErrDatabaseURL, redact(u))
		}
		host := u.Host
		if u.Port() == "" {
			host += ":3306"
		}
		userinfo := ""
		if u.User != nil {
			userinfo = u.User.Username()
			if p, ok := u.User.Password(); ok {
				userinfo += ":" + p
			}
			userinfo += "@"
		}
		q := u.Query()
		q.Set("parseTime", "true")
		q.Set("loc", "UTC")
		if q.Get("interpolateParams") == "" {
			// One round trip per query instead of prepare/execute/close.
			q.Set("interpolateParams", "true")
		}
		if q.Get("time_zone") == "" {
			q.Set("time_zone", "'+00:00'")
		}
		return DatabaseURL{Dialect: MySQL, Driver: DriverMySQL, DSN: fmt.Sprintf("%stcp(%s)/%s?%s", userinfo, host, db, q.Encode())}, nil
	default:
		return DatabaseURL{}, fmt.Errorf("%w: %q has an unknown scheme; use sqlite:PATH, postgres://... or mysql://...", ErrDatabaseURL, raw)
	}
}

func redact(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User(c.User.Username())
	}
	return c.String()
}
