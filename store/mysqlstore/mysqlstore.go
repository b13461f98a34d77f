package mysqlstore

import (
	"database/sql"
	"embed"
	"errors"

	"github.com/go-sql-driver/mysql"

	"github.com/hubsync/hubsync/internal/sqlq"
	"github.com/hubsync/hubsync/store"
)

// queries are the backend's sql/NAME.sql files, which override or add to the
// engine's shared ones.
//
//go:embed sql/*.sql
var queries embed.FS

var dialect = sqlq.Dialect{
	Name:      store.MySQL,
	Queries:   queries,
	Mode:      sqlq.ClaimLockThenUpdate,
	ClaimTx:   &sql.TxOptions{Isolation: sql.LevelReadCommitted},
	Retryable: retryable,
}

// retryable reports a deadlock (1213) or lock wait timeout (1205).
func retryable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// Store is the MySQL/MariaDB store.
type Store struct {
	*sqlq.Store
}

var _ store.Store = (*Store)(nil)

// New returns a store on db, a migrated MySQL/MariaDB database opened with a DSN
// from ParseURL (parseTime, UTC); Open does both.
func New(db *sql.DB, cfg store.Config) (*Store, error) {
	s, err := sqlq.New(db, dialect, cfg)
	if err != nil {
		return nil, err
	}
	return &Store{s}, nil
}
