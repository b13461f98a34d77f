package dialectsql

import (
	"context"
	"database/sql"
	"fmt"
)

// InTx runs fn in a transaction of db and commits it, or rolls it back when fn
// fails. what prefixes the begin and commit errors ("links", "records").
func InTx(ctx context.Context, db *sql.DB, what string, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: begin: %w", what, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: commit: %w", what, err)
	}
	return nil
}
