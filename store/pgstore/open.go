package pgstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers DriverName

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

// DriverName is the database/sql driver this backend opens
// (github.com/jackc/pgx/v5/stdlib).
const DriverName = "pgx"

// Pool sizes OpenDB sets.
const (
	// MaxOpenConnsDefault bounds PostgreSQL connections.
	MaxOpenConnsDefault = 20
	// ConnMaxLifetimeDefault recycles connections, so failovers and server-side
	// limits are picked up.
	ConnMaxLifetimeDefault = 30 * time.Minute
)

// ParseURL checks a postgres:// (or postgresql://) URL and returns it as the
// driver's DSN, which pgx takes as it is.
func ParseURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if !strings.HasPrefix(raw, "postgres://") && !strings.HasPrefix(raw, "postgresql://") {
		return "", fmt.Errorf("%w: %q is not a postgres:// URL", store.ErrDatabaseURL, store.RedactURL(raw))
	}
	if _, err := url.Parse(raw); err != nil {
		return "", fmt.Errorf("%w: %q: %v; use postgres://user:pass@host:5432/DBNAME", store.ErrDatabaseURL, store.RedactURL(raw), errors.Unwrap(err))
	}
	return raw, nil
}

// OpenDB opens the database of a postgres:// URL, sizes its pool and checks
// that it answers.
func OpenDB(ctx context.Context, rawURL string) (*sql.DB, error) {
	dsn, err := ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	return dialectsql.OpenDB(ctx, store.Postgres, DriverName, dsn, func(db *sql.DB) {
		db.SetMaxOpenConns(MaxOpenConnsDefault)
		db.SetMaxIdleConns(MaxOpenConnsDefault)
		db.SetConnMaxLifetime(ConnMaxLifetimeDefault)
	})
}

// Open opens the database of a postgres:// URL (OpenDB) and returns its store.
// It does not migrate. Closing the store's DB closes the database.
func Open(ctx context.Context, rawURL string, cfg store.Config) (*Store, error) {
	db, err := OpenDB(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	s, err := New(db, cfg)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s store: %w", store.Postgres, err)
	}
	return s, nil
}
