package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql" // registers DriverName

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

// DriverName is the database/sql driver this backend opens
// (github.com/go-sql-driver/mysql).
const DriverName = "mysql"

// Pool sizes OpenDB sets.
const (
	// MaxOpenConnsDefault bounds MySQL/MariaDB connections.
	MaxOpenConnsDefault = 20
	// ConnMaxLifetimeDefault recycles connections, so failovers and server-side
	// limits (wait_timeout) are picked up.
	ConnMaxLifetimeDefault = 30 * time.Minute
)

// ParseURL turns a mysql:// (or mariadb://) URL, mysql://user:pass@host:port/db,
// into the driver's DSN, with parseTime, UTC and client-side parameter
// interpolation. The driver's other parameters pass through, but for
// clientFoundRows, which is refused.
func ParseURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if !strings.HasPrefix(raw, "mysql://") && !strings.HasPrefix(raw, "mariadb://") {
		return "", fmt.Errorf("%w: %q is not a mysql:// URL", store.ErrDatabaseURL, store.RedactURL(raw))
	}
	u, err := url.Parse(raw)
	if err != nil {
		hint := "use mysql://user:pass@host:3306/DBNAME"
		if strings.Contains(raw, "@tcp(") || strings.Contains(raw, "@unix(") {
			hint += " (a URL, not the driver's user:pass@tcp(host:port)/db form)"
		}
		return "", fmt.Errorf("%w: %q: %v; %s", store.ErrDatabaseURL, store.RedactURL(raw), errors.Unwrap(err), hint)
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" {
		return "", fmt.Errorf("%w: %q names no database; use mysql://user:pass@host:3306/DBNAME", store.ErrDatabaseURL, store.RedactURL(u.String()))
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
	if v := q.Get("clientFoundRows"); v != "" && v != "0" && !strings.EqualFold(v, "false") {
		// hubsync tells a duplicate from a new row by the rows an upsert
		// changed (INSERT … ON DUPLICATE KEY UPDATE of nothing is 0); with
		// clientFoundRows it is 1, and a replayed request would run again.
		return "", fmt.Errorf("%w: %q sets clientFoundRows=%s, which hubsync cannot work with (it counts changed rows, not matched ones); remove it from the URL",
			store.ErrDatabaseURL, store.RedactURL(u.String()), v)
	}
	q.Set("parseTime", "true")
	q.Set("loc", "UTC")
	if q.Get("interpolateParams") == "" {
		// One round trip per query instead of prepare/execute/close.
		q.Set("interpolateParams", "true")
	}
	if q.Get("time_zone") == "" {
		q.Set("time_zone", "'+00:00'")
	}
	return fmt.Sprintf("%stcp(%s)/%s?%s", userinfo, host, db, q.Encode()), nil
}

// OpenDB opens the database of a mysql:// URL, sizes its pool and checks that
// it answers.
func OpenDB(ctx context.Context, rawURL string) (*sql.DB, error) {
	dsn, err := ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	return dialectsql.OpenDB(ctx, store.MySQL, DriverName, dsn, func(db *sql.DB) {
		db.SetMaxOpenConns(MaxOpenConnsDefault)
		db.SetMaxIdleConns(MaxOpenConnsDefault)
		db.SetConnMaxLifetime(ConnMaxLifetimeDefault)
	})
}

// Open opens the database of a mysql:// URL (OpenDB) and returns its store. It
// does not migrate. Closing the store's DB closes the database.
func Open(ctx context.Context, rawURL string, cfg store.Config) (*Store, error) {
	db, err := OpenDB(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	s, err := New(db, cfg)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s store: %w", store.MySQL, err)
	}
	return s, nil
}
