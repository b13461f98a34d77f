package dialectsql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hubsync/hubsync/store"
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

// InTxRetry is InTx run again whole while transient (a store.Store's
// Retryable) says its failure was transient (Retry): fn must start from
// fresh state on every run, since the database rolled back the failed one.
func InTxRetry(ctx context.Context, db *sql.DB, transient func(error) bool, what string, fn func(tx *sql.Tx) error) error {
	return Retry(ctx, transient, func() error { return InTx(ctx, db, what, fn) })
}

// RetryAttempts bounds the runs of one Retry: the first and nine retries.
const RetryAttempts = 10

// Retry runs f, one statement or one whole transaction, and runs it again
// while transient (a store.Store's Retryable: deadlock, serialization failure,
// lock wait timeout) says its failure was transient, at most RetryAttempts
// times in all. f must start from fresh state on every run: the database
// rolled back everything the failed run did. An error matching
// store.ErrLeaseLost is never retried (a fence said the work is no longer this
// caller's), nor is any error once ctx is done; a nil transient retries
// nothing. It returns f's last error.
//
// Retries wait a short, random and growing time first: transactions that
// deadlocked each other and retried at once would meet again (MariaDB's claim
// under eight concurrent claimers did, five times in a row). ctx ending during
// a wait stops the retries.
func Retry(ctx context.Context, transient func(error) bool, f func() error) error {
	var err error
	for i := range RetryAttempts {
		if i > 0 {
			wait := time.Duration(1+rand.IntN(2<<min(i, 6))) * time.Millisecond
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return err
			case <-t.C:
			}
		}
		err = f()
		if err == nil || transient == nil || ctx.Err() != nil || errors.Is(err, store.ErrLeaseLost) || !transient(err) {
			return err
		}
	}
	return err
}

// DeleteBatches calls del, which deletes at most batchSize rows (a DELETE …
// LIMIT) and returns how many it deleted, until a call deletes fewer, del
// fails or ctx ends; it returns the rows deleted in all. The cleanups use
// it so that a large backlog is deleted in short statements, each holding
// its locks briefly. A batchSize below 1 is taken as 1.
func DeleteBatches(ctx context.Context, batchSize int, del func() (int64, error)) (int64, error) {
	batchSize = max(batchSize, 1)
	var total int64
	for {
		n, err := del()
		total += n
		if err != nil {
			return total, err
		}
		if n < int64(batchSize) {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}
