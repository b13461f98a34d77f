package migrate_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/migrate"
	"github.com/hubsync/hubsync/store"
)

// TestMigrationWaitsForLocksInBoundedSteps: a transaction holds the table a
// pending migration alters (a report, a backup). The migration's schema
// change must give up waiting after LockTimeout, tell OnLockWait, and ask
// again, rather than wait as long as the transaction runs while every
// replica's statements on the table queue behind it. Once the transaction
// ends, the migration applies.
func TestMigrationWaitsForLocksInBoundedSteps(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		if d == store.SQLite {
			t.Skip("SQLite has no table locks: a writer waits for the database (busy_timeout)")
		}
		{
			ctx := context.Background()
			db := dbtest.New(t, d)
			all, err := migrate.Migrations(d)
			if err != nil {
				t.Fatal(err)
			}
			applyThrough(t, db, d, all, 29) // 030 alters hubsync_budget
			blocker, err := db.DB.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var n int
			if err := blocker.QueryRowContext(ctx, "SELECT COUNT(*) FROM hubsync_budget").Scan(&n); err != nil {
				t.Fatal(err)
			}
			var end sync.Once
			release := func() { end.Do(func() { _ = blocker.Rollback() }) }
			// Without bounded waits the migration would wait for this
			// fallback; the test then fails for want of a lock wait.
			fallback := time.AfterFunc(30*time.Second, release)
			defer fallback.Stop()

			m, err := migrate.New(db.DB, d)
			if err != nil {
				t.Fatal(err)
			}
			m.LockTimeout = time.Second
			var waits atomic.Int32
			m.OnLockWait = func(mg migrate.Migration, attempt int, err error) {
				if mg.Version != 30 {
					t.Errorf("lock wait of migration %d; want 030", mg.Version)
				}
				table := migrate.LockWaitTable(err)
				if table != "hubsync_budget" {
					t.Errorf("LockWaitTable(%v) = %q; want hubsync_budget", err, table)
				}
				// The hint the operator is given finds the blocking session.
				rows, qerr := db.DB.QueryContext(ctx, migrate.LockWaitHint(d, table))
				if qerr != nil {
					t.Errorf("the hint query: %v", qerr)
				} else {
					n := 0
					for rows.Next() {
						n++
					}
					rows.Close()
					if n == 0 {
						t.Errorf("the hint query %q lists no session while one holds %s", migrate.LockWaitHint(d, table), table)
					}
				}
				waits.Add(1)
				release()
			}
			if _, err := m.Up(ctx); err != nil {
				t.Fatal(err)
			}
			if waits.Load() == 0 {
				t.Fatal("the migration waited for the open transaction without a bound (OnLockWait never called)")
			}
			if err := m.Check(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
}
