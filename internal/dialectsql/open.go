package dialectsql

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hubsync/hubsync/store"
)

// OpenDB opens dsn with the database/sql driver a backend registered, sizes
// its pool with pool, and checks that the database answers. The backends'
// OpenDB functions call it after parsing their own URL form.
func OpenDB(ctx context.Context, d store.Dialect, driver, dsn string, pool func(*sql.DB)) (*sql.DB, error) {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", d, err)
	}
	if pool != nil {
		pool(db)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		if d == store.SQLite {
			return nil, fmt.Errorf("open %s database: cannot open its file; check the path in the database URL and that this user may read and write it and its directory: %w", d, err)
		}
		return nil, fmt.Errorf("open %s database: cannot reach it; check the database URL and that the server is up: %w", d, err)
	}
	return db, nil
}
