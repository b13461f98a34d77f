package sqlq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

// ClaimMode is how a dialect claims events.
type ClaimMode int

// The claim modes.
const (
	// ClaimReturning claims with one UPDATE … RETURNING statement (query Claim,
	// ClaimIDs), and completes/releases with one UPDATE … RETURNING Id. A
	// dialect that has query ClaimCall keeps Claim in a server-side function
	// and claims by calling it (ClaimIDs stays a statement).
	ClaimReturning ClaimMode = iota
	// ClaimLockThenUpdate claims in one short transaction: lock candidates
	// (ClaimLockPending + ClaimLockExpired, or ClaimLockIDs) with FOR UPDATE SKIP
	// LOCKED, ClaimUpdate them and SelectIDs them. Batch lease changes lock the live leases (LockLeases) first.
	// For databases without UPDATE … RETURNING (MySQL, MariaDB).
	ClaimLockThenUpdate
)

// Dialect describes one database to the engine.
type Dialect struct {
	Name store.Dialect
	// Queries holds the backend's sql/NAME.sql files: text/template sources
	// rendered once per queue (see tableData), which override or add to the
	// shared internal/sqlq/sql/NAME.sql. Placeholders and the encoding of
	// timestamps and JSON follow Name (internal/dialectsql).
	Queries fs.FS
	// Mode is the claim strategy.
	Mode ClaimMode
	// ClaimTx are the options of claim transactions in ClaimLockThenUpdate mode;
	// read committed, so the checks of other events see the latest commits.
	ClaimTx *sql.TxOptions
	// Retryable reports errors (deadlock, serialization failure) after which the
	// engine's own short transactions are retried; nil means none.
	Retryable func(error) bool
	// SerializeWrites runs the engine's own write statements and transactions
	// one at a time per Store (SQLite, which has one writer per database). Writers
	// queue on a Go mutex in arrival order instead of polling the database lock
	// with busy_timeout's sleeps, which starves unlucky writers under contention.
	// Writers outside the engine (the caller's transactions, other packages on the
	// same *sql.DB) still meet at the database lock and its busy_timeout.
	SerializeWrites bool
}

// Store implements store.Store for a Dialect. Backends embed it.
type Store struct {
	db  *sql.DB
	d   Dialect
	cfg store.Config
	// wmu serialises writes when d.SerializeWrites is set.
	wmu sync.Mutex

	inbound  *InboundRepo
	outbound *OutboundRepo
	internal *InternalRepo
}

// New returns a Store on db, which must be migrated to the current schema.
func New(db *sql.DB, d Dialect, cfg store.Config) (*Store, error) {
	if db == nil {
		return nil, errors.New("sqlq: db is nil")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Retry.Validate(); err != nil {
		return nil, fmt.Errorf("store config: %w", err)
	}
	s := &Store{db: db, d: d, cfg: cfg}
	in, err := newQueue(s, inboundDef)
	if err != nil {
		return nil, err
	}
	out, err := newQueue(s, outboundDef)
	if err != nil {
		return nil, err
	}
	internal, err := newQueue(s, internalDef)
	if err != nil {
		return nil, err
	}
	s.inbound = &InboundRepo{in}
	s.outbound = &OutboundRepo{out}
	s.internal = &InternalRepo{internal}
	return s, nil
}

// Dialect names the database.
func (s *Store) Dialect() store.Dialect { return s.d.Name }

// DB is the database the store writes to.
func (s *Store) DB() *sql.DB { return s.db }

// Inbound is the _System_IntegrationInbound queue.
func (s *Store) Inbound() store.InboundRepository { return s.inbound }

// Outbound is the _System_IntegrationOutbound queue.
func (s *Store) Outbound() store.OutboundRepository { return s.outbound }

// Internal is the _System_OutboxEvent queue.
func (s *Store) Internal() store.InternalRepository { return s.internal }

// InboundRepo returns the concrete inbound queue (for backend extensions).
func (s *Store) InboundRepo() *InboundRepo { return s.inbound }

// OutboundRepo returns the concrete outbound queue (for backend extensions).
func (s *Store) OutboundRepo() *OutboundRepo { return s.outbound }

// InternalRepo returns the concrete internal queue (for backend extensions).
func (s *Store) InternalRepo() *InternalRepo { return s.internal }

// Now is the store's clock.
func (s *Store) Now() time.Time { return s.cfg.Now() }

// now is the clock at microsecond precision in UTC, as stored.
func (s *Store) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Microsecond) }

// Stats counts events by queue, key and status.
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	st := store.Stats{Now: s.Now()}
	for _, f := range []func(context.Context) ([]store.StatsRow, error){s.inbound.stats, s.outbound.stats, s.internal.stats} {
		rows, err := f(ctx)
		if err != nil {
			return store.Stats{}, fmt.Errorf("stats: %w", err)
		}
		st.Rows = append(st.Rows, rows...)
	}
	return st, nil
}

// Conn is what an enqueue writes through: a *sql.Tx via SQLConn, or a native
// driver transaction (pgstore adapts pgx.Tx).
type Conn interface {
	// Exec runs a statement and returns the rows it affected.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// QueryRow runs a query and scans its first row; sql.ErrNoRows when none.
	QueryRow(ctx context.Context, query string, args []any, dest ...any) error
}

// SQLConn adapts a database/sql transaction, connection or pool to Conn.
type SQLConn struct{ store.DBTX }

// Exec implements Conn.
func (c SQLConn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := c.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// QueryRow implements Conn.
func (c SQLConn) QueryRow(ctx context.Context, query string, args []any, dest ...any) error {
	return c.QueryRowContext(ctx, query, args...).Scan(dest...)
}

// inTx runs f in a transaction of the store's database, retrying it when the
// dialect says the failure was transient (deadlock).
func (s *Store) inTx(ctx context.Context, opts *sql.TxOptions, f func(tx *sql.Tx) error) error {
	return s.retry(ctx, func() error { return s.tryTx(ctx, opts, f) })
}

// retry runs f, one statement or one transaction, and runs it again while the
// dialect says its failure was transient (dialectsql.Retry).
func (s *Store) retry(ctx context.Context, f func() error) error {
	return dialectsql.Retry(ctx, s.d.Retryable, f)
}

// write runs f, one statement in autocommit, under the write mutex, and runs
// it again while it fails with a transient error: a deadlock victim's
// statement was rolled back whole, so running it again is safe. A lease
// statement (Complete, Release, ExtendLease, Fail, Retry) locks its events'
// lanes (the lane triggers) in its own order, against enqueueing
// transactions that lock them in theirs; the loser gets 40P01 or 1213, which
// must not reach the worker as a failed complete.
func (s *Store) write(ctx context.Context, f func() error) error {
	return s.retry(ctx, func() error {
		defer s.lockWrites()()
		return f()
	})
}

// Retryable reports whether err is a transient failure of the database
// (Dialect.Retryable: deadlock, serialization failure, lock wait timeout).
func (s *Store) Retryable(err error) bool { return s.d.Retryable != nil && s.d.Retryable(err) }

// lockWrites takes the write mutex where the dialect serialises writes and
// returns its release. Never call it while holding it, nor inside a caller's
// transaction (it could wait on a database lock that transaction holds).
func (s *Store) lockWrites() (unlock func()) {
	if !s.d.SerializeWrites {
		return func() {}
	}
	s.wmu.Lock()
	return s.wmu.Unlock
}

func (s *Store) tryTx(ctx context.Context, opts *sql.TxOptions, f func(tx *sql.Tx) error) error {
	defer s.lockWrites()()
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := f(tx); err != nil {
		tx.Rollback() //nolint:errcheck // the error that matters is f's
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
