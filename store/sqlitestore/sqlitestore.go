package sqlitestore

import (
	"database/sql"
	"embed"
	"fmt"

	"github.com/hubsync/hubsync/internal/sqlq"
	"github.com/hubsync/hubsync/store"
)

// queries are the backend's sql/NAME.sql files, which override or add to the
// engine's shared ones.
//
//go:embed sql/*.sql
var queries embed.FS

// Dialect describes SQLite to the shared engine.
var dialect = sqlq.Dialect{
	Name:    store.SQLite,
	Queries: queries,
	Mode:    sqlq.ClaimReturning,
	// One writer per database: queue the engine's writers in process.
	SerializeWrites: true,
}

// Store is the SQLite store.
type Store struct {
	*sqlq.Store
}

var _ store.Store = (*Store)(nil)

// New returns a store on db, a migrated SQLite database opened with a DSN from
// ParseURL; Open does both.
func New(db *sql.DB, cfg store.Config) (*Store, error) {
	if err := checkOpened(db); err != nil {
		return nil, err
	}
	s, err := sqlq.New(db, dialect, cfg)
	if err != nil {
		return nil, err
	}
	return &Store{s}, nil
}

// checkOpened refuses a database opened otherwise than OpenDB does: through
// another driver, whose transactions begin deferred (two writers then fail
// with SQLITE_BUSY instead of waiting), or without a busy timeout.
func checkOpened(db *sql.DB) error {
	const fix = "open it with sqlitestore.OpenDB (or hubsync.Open), or with sql.Open(sqlitestore.DriverName, dsn) and a dsn from sqlitestore.ParseURL"
	if _, ok := db.Driver().(openWait); !ok {
		return fmt.Errorf("sqlitestore: the database was opened with the driver %T, not %s: its transactions would fail with SQLITE_BUSY under concurrent writers; %s", db.Driver(), DriverName, fix)
	}
	var ms int64
	if err := db.QueryRow("PRAGMA busy_timeout").Scan(&ms); err != nil {
		return fmt.Errorf("sqlitestore: read busy_timeout: %w", err)
	}
	if ms <= 0 {
		return fmt.Errorf("sqlitestore: the database has no busy timeout (its DSN sets none): writers would fail with SQLITE_BUSY instead of waiting; %s", fix)
	}
	return nil
}
