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

// databaseURLFlag adds -database-url, defaulting to HUBSYNC_DATABASE_URL. Its
// default is shown by -h without the password.
func databaseURLFlag(fs *flag.FlagSet) *string {
	p := new(string)
	*p = envOr("HUBSYNC_DATABASE_URL", databaseURLDefault)
	fs.Var((*databaseURLValue)(p), "database-url", "database URL (HUBSYNC_DATABASE_URL): sqlite:PATH, postgres://..., mysql://...")
	return p
}

// databaseURLValue is a flag.Value holding a database URL whose String, which
// flag prints as the default in -h, hides the password (store.RedactURL).
type databaseURLValue string

func (v *databaseURLValue) String() string {
	if v == nil {
		return ""
	}
	return store.RedactURL(string(*v))
}

func (v *databaseURLValue) Set(s string) error {
	*v = databaseURLValue(s)
	return nil
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
			return nil, fmt.Errorf("%w; with the same HUBSYNC_DATABASE_URL (on SQLite, starting `hubsync serve` migrates too)", err)
		}
		return nil, err
	}
	return db, nil
}
