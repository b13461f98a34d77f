package pgstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hubsync/hubsync/internal/sqlq"
	"github.com/hubsync/hubsync/store"
)

// queries are the backend's sql/NAME.sql files, which override or add to the
// engine's shared ones.
//
//go:embed sql/*.sql
var queries embed.FS

var dialect = sqlq.Dialect{
	Name:      store.Postgres,
	Queries:   queries,
	Mode:      sqlq.ClaimReturning,
	Retryable: retryable,
}

// retryable reports a deadlock or serialization failure.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// Store is the PostgreSQL store.
type Store struct {
	*sqlq.Store
}

var _ store.Store = (*Store)(nil)

// New returns a store on db, a migrated PostgreSQL database opened with the
// "pgx" driver.
func New(db *sql.DB, cfg store.Config) (*Store, error) {
	s, err := sqlq.New(db, dialect, cfg)
	if err != nil {
		return nil, err
	}
	return &Store{s}, nil
}

// EnqueueOutboundPgx enqueues an outbound event inside the caller's pgx
// transaction, so the record change and the event commit together.
func (s *Store) EnqueueOutboundPgx(ctx context.Context, tx pgx.Tx, ev store.OutboundEvent) (store.EnqueueResult, error) {
	return s.OutboundRepo().EnqueueConn(ctx, pgxConn{tx}, ev)
}

// EnqueueInboundPgx enqueues an inbound event inside the caller's pgx
// transaction; a duplicate IdempotencyKey reports Inserted false.
func (s *Store) EnqueueInboundPgx(ctx context.Context, tx pgx.Tx, ev store.InboundEvent) (store.EnqueueResult, error) {
	return s.InboundRepo().EnqueueConn(ctx, pgxConn{tx}, ev)
}

// EnqueueInternalPgx enqueues an internal record event inside the caller's pgx
// transaction.
func (s *Store) EnqueueInternalPgx(ctx context.Context, tx pgx.Tx, ev store.InternalEvent) (store.EnqueueResult, error) {
	return s.InternalRepo().EnqueueConn(ctx, pgxConn{tx}, ev)
}

// pgxConn adapts a pgx.Tx to the engine's Conn.
type pgxConn struct{ tx pgx.Tx }

func (c pgxConn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := c.tx.Exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (c pgxConn) QueryRow(ctx context.Context, query string, args []any, dest ...any) error {
	err := c.tx.QueryRow(ctx, query, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return sql.ErrNoRows
	}
	return err
}
