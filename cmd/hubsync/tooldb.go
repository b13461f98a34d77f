package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/migrate"
	"github.com/hubsync/hubsync/store"
)

// databaseURLFlag adds -database-url, defaulting to HUBSYNC_DATABASE_URL.
func databaseURLFlag(fs *flag.FlagSet) *string {
	return fs.String("database-url", envOr("HUBSYNC_DATABASE_URL", databaseURLDefault), "database URL (HUBSYNC_DATABASE_URL): sqlite:PATH, postgres://..., mysql://...")
}

// openMigrated opens the database for an operator command. It never migrates:
// a schema that is not current is reported with what to run.
func openMigrated(ctx context.Context, rawURL string) (*hubsync.DB, error) {
	db, err := hubsync.Open(ctx, rawURL, store.Config{})
	if err != nil {
		return nil, fmt.Errorf("HUBSYNC_DATABASE_URL: %w", err)
	}
	if err := hubsync.CheckSchema(ctx, db); err != nil {
		db.Close()
		if errors.Is(err, migrate.ErrNotMigrated) {
			return nil, fmt.Errorf("%w; run `hubsync migrate` (or start `hubsync serve` on SQLite) with the same HUBSYNC_DATABASE_URL", err)
		}
		return nil, err
	}
	return db, nil
}
