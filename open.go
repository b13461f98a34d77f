package hubsync

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hubsync/hubsync/migrate"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/mysqlstore"
	"github.com/hubsync/hubsync/store/pgstore"
	"github.com/hubsync/hubsync/store/sqlitestore"
)

// Connection pool sizes Open sets; each backend owns its own (see
// sqlitestore.MaxOpenConnsDefault, pgstore and mysqlstore).
const (
	// SQLiteMaxOpenConnsDefault bounds SQLite connections.
	SQLiteMaxOpenConnsDefault = sqlitestore.MaxOpenConnsDefault
	// ServerMaxOpenConnsDefault bounds PostgreSQL and MySQL connections.
	ServerMaxOpenConnsDefault = pgstore.MaxOpenConnsDefault
	// ConnMaxLifetimeDefault recycles server connections, so failovers and
	// server-side limits are picked up.
	ConnMaxLifetimeDefault = pgstore.ConnMaxLifetimeDefault
)

// DB is an open hubsync database: the store and the *sql.DB under it.
type DB struct {
	// Store holds the three queues.
	Store store.Store
	// SQL is the database; use it for the application's own tables so a record
	// change and its outbound event commit in one transaction (outbox.EnqueueTx).
	SQL *sql.DB
	// Dialect names the database.
	Dialect store.Dialect
}

// Open opens the database named by databaseURL (the forms
// sqlite:PATH, postgres://…, mysql://…), checks that it answers, and returns its
// store. It does not migrate; call Migrate or CheckSchema. It dispatches on the
// URL's scheme to the backend, which parses the rest of the URL, opens it with
// its driver and sizes the connection pool.
func Open(ctx context.Context, databaseURL string, cfg store.Config) (*DB, error) {
	d, err := store.DialectOf(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	var s interface {
		store.Store
		DB() *sql.DB
	}
	switch d {
	case store.SQLite:
		s, err = asStore(sqlitestore.Open(ctx, databaseURL, cfg))
	case store.Postgres:
		s, err = asStore(pgstore.Open(ctx, databaseURL, cfg))
	case store.MySQL:
		s, err = asStore(mysqlstore.Open(ctx, databaseURL, cfg))
	}
	if err != nil {
		return nil, err
	}
	return &DB{Store: s, SQL: s.DB(), Dialect: d}, nil
}

// asStore drops a backend's concrete type, so that a failed open yields a nil
// interface rather than a typed nil pointer.
func asStore[S interface {
	store.Store
	DB() *sql.DB
}](s S, err error) (interface {
	store.Store
	DB() *sql.DB
}, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ParseDatabaseURL parses a database URL into its dialect, driver and
// DSN: store.DialectOf picks the backend by scheme and the backend parses the
// rest (sqlitestore.ParseURL, pgstore.ParseURL, mysqlstore.ParseURL). Errors
// wrap store.ErrDatabaseURL.
func ParseDatabaseURL(raw string) (store.DatabaseURL, error) {
	d, err := store.DialectOf(raw)
	if err != nil {
		return store.DatabaseURL{}, err
	}
	var driver, dsn string
	switch d {
	case store.SQLite:
		driver = sqlitestore.DriverName
		dsn, err = sqlitestore.ParseURL(raw)
	case store.Postgres:
		driver = pgstore.DriverName
		dsn, err = pgstore.ParseURL(raw)
	case store.MySQL:
		driver = mysqlstore.DriverName
		dsn, err = mysqlstore.ParseURL(raw)
	}
	if err != nil {
		return store.DatabaseURL{}, err
	}
	return store.DatabaseURL{Dialect: d, Driver: driver, DSN: dsn}, nil
}

// NewStore returns the backend of dialect over an open database: sqlitestore,
// pgstore or mysqlstore. Open uses it; so can an application that opens its own
// *sql.DB. A SQLite database must be opened as sqlitestore.OpenDB opens it
// (its driver and a DSN from sqlitestore.ParseURL, which set the busy timeout
// and immediate transactions); another is refused with an error that says so.
func NewStore(db *sql.DB, dialect store.Dialect, cfg store.Config) (store.Store, error) {
	switch dialect {
	case store.SQLite:
		return sqlitestore.New(db, cfg)
	case store.Postgres:
		return pgstore.New(db, cfg)
	case store.MySQL:
		return mysqlstore.New(db, cfg)
	}
	return nil, fmt.Errorf("no store for dialect %q; use sqlite, postgres or mysql", dialect)
}

// Close closes the database.
func (db *DB) Close() error {
	if db == nil || db.SQL == nil {
		return errors.New("hubsync: Close of a DB that Open did not return")
	}
	return db.SQL.Close()
}

// Migrate applies the pending schema migrations and returns the versions it
// applied (none when the schema is current). It is what `hubsync migrate` runs.
func Migrate(ctx context.Context, db *DB) ([]int, error) {
	m, err := migrate.New(db.SQL, db.Dialect)
	if err != nil {
		return nil, err
	}
	return m.Up(ctx)
}

// CheckSchema returns nil when the schema is exactly current, an error matching
// migrate.ErrNotMigrated when migrations are pending (run `hubsync migrate`),
// and one matching migrate.ErrDatabaseNewer when a newer hubsync migrated it.
func CheckSchema(ctx context.Context, db *DB) error {
	m, err := migrate.New(db.SQL, db.Dialect)
	if err != nil {
		return err
	}
	return m.Check(ctx)
}
