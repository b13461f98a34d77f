package hubsync

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql" // registers "mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"

	"github.com/hubsync/hubsync/migrate"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/mysqlstore"
	"github.com/hubsync/hubsync/store/pgstore"
	"github.com/hubsync/hubsync/store/sqlitestore"
)

// Connection pool sizes Open sets.
const (
	// SQLiteMaxOpenConnsDefault bounds SQLite connections. SQLite admits one
	// writer at a time whatever the pool size; a few connections let readers run
	// beside the writer (WAL) and keep an application transaction from starving
	// the store, while writers wait on the busy timeout instead of piling up. An
	// in-memory database gets one connection, as each connection would be a
	// separate database.
	SQLiteMaxOpenConnsDefault = 4
	// ServerMaxOpenConnsDefault bounds PostgreSQL and MySQL connections.
	ServerMaxOpenConnsDefault = 20
	// ConnMaxLifetimeDefault recycles server connections, so failovers and
	// server-side limits are picked up.
	ConnMaxLifetimeDefault = 30 * time.Minute
)

// DB is an open hubsync database: the store and the *sql.DB under it.
type DB struct {
	// Store holds the three queues.
	Store store.Store
	// SQL is the database; use it for the application's own tables so a record
	// change and its outbound event commit in one transaction (EnqueueTx).
	SQL *sql.DB
	// Dialect names the database.
	Dialect store.Dialect
}

// Open opens the database named by databaseURL (the forms
// sqlite:PATH, postgres://…, mysql://…), checks that it answers, and returns its
// store. It does not migrate; call Migrate or CheckSchema.
func Open(ctx context.Context, databaseURL string, cfg store.Config) (*DB, error) {
	u, err := store.ParseDatabaseURL(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	sqldb, err := sql.Open(u.Driver, u.DSN)
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", u.Dialect, err)
	}
	configurePool(sqldb, u)
	if err := sqldb.PingContext(ctx); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("open %s database: cannot reach it; check the database URL and that the server is up: %w", u.Dialect, err)
	}
	s, err := NewStore(sqldb, u.Dialect, cfg)
	if err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("open %s store: %w", u.Dialect, err)
	}
	return &DB{Store: s, SQL: sqldb, Dialect: u.Dialect}, nil
}

// NewStore returns the backend of dialect over an open database: sqlitestore,
// pgstore or mysqlstore. Open uses it; so can an application that opens its own
// *sql.DB.
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

func configurePool(db *sql.DB, u store.DatabaseURL) {
	if u.Dialect != store.SQLite {
		db.SetMaxOpenConns(ServerMaxOpenConnsDefault)
		db.SetMaxIdleConns(ServerMaxOpenConnsDefault)
		db.SetConnMaxLifetime(ConnMaxLifetimeDefault)
		return
	}
	n := SQLiteMaxOpenConnsDefault
	if strings.Contains(u.DSN, ":memory:") || strings.Contains(u.DSN, "mode=memory") {
		n = 1
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(0) // a SQLite connection holds no server resources
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
