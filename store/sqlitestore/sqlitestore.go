package sqlitestore

import (
	"database/sql"
	"embed"

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
	s, err := sqlq.New(db, dialect, cfg)
	if err != nil {
		return nil, err
	}
	return &Store{s}, nil
}
