package inbound

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/mysqlstore"
	"github.com/hubsync/hubsync/store/pgstore"
)

// openOtherStore opens the PostgreSQL or MySQL backend.
func openOtherStore(d store.Dialect, db *sql.DB, cfg store.Config) (store.Store, error) {
	switch d {
	case store.Postgres:
		return pgstore.New(db, cfg)
	case store.MySQL:
		return mysqlstore.New(db, cfg)
	}
	return nil, fmt.Errorf("%w: %s", errBackendMissing, d)
}

var errBackendMissing = errors.New("store backend not available")
