package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/pgstore"
	"github.com/hubsync/hubsync/store/storetest"
)

const destination = "hubspot"

// hubsyncBench runs claim→complete on a migrated schema of its own.
type hubsyncBench struct {
	admin  *sql.DB
	schema string
	db     *hubsync.DB
	runs   int
}

func newHubsyncBench(ctx context.Context, adminURL, schema string) (*hubsyncBench, error) {
	admin, err := pgstore.OpenDB(ctx, adminURL)
	if err != nil {
		return nil, fmt.Errorf("hubsync: %w", err)
	}
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		admin.Close()
		return nil, fmt.Errorf("hubsync: create schema: %w", err)
	}
	b := &hubsyncBench{admin: admin, schema: schema}
	u, err := withSearchPath(adminURL, schema)
	if err == nil {
		b.db, err = hubsync.Open(ctx, u, store.Config{})
	}
	if err == nil {
		_, err = hubsync.Migrate(ctx, b.db)
	}
	if err != nil {
		b.close()
		return nil, fmt.Errorf("hubsync: %w", err)
	}
	return b, nil
}

func (b *hubsyncBench) close() {
	if b.db != nil {
		b.db.Close()
	}
	b.admin.Exec("DROP SCHEMA " + b.schema + " CASCADE")
	b.admin.Close()
}

// run empties the outbound queue, bulk-loads n pending events (one per record)
// and analyzes the table, then times workers goroutines claiming batches of
// storetest.BenchBatchSize and completing each at once until all n are done.
func (b *hubsyncBench) run(ctx context.Context, n, workers int) (float64, error) {
	s := b.db.Store
	if err := b.load(ctx, n); err != nil {
		return 0, err
	}

	var (
		done  atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	start := time.Now()
	for w := range workers {
		p := store.ClaimParams{Key: destination, Limit: storetest.BenchBatchSize, LeaseDuration: time.Hour, Owner: "bench-" + strconv.Itoa(w)}
		wg.Go(func() {
			for done.Load() < int64(n) {
				evs, err := s.Outbound().Claim(ctx, p)
				if err == nil && len(evs) > 0 {
					ls := make([]store.Lease, len(evs))
					for i, ev := range evs {
						ls[i] = ev.Lease()
					}
					err = s.Outbound().Complete(ctx, ls...)
					done.Add(int64(len(evs)))
				}
				if err == nil && len(evs) == 0 && done.Load() < int64(n) {
					// Another worker holds the rest; nothing is due before it completes.
					time.Sleep(time.Millisecond)
				}
				if err != nil {
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
					done.Store(int64(n))
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := elapsedSince(start, time.Now())
	if first != nil {
		return 0, first
	}
	return float64(n) / elapsed.Seconds(), nil
}

// load empties the outbound queue, bulk-loads n pending events (one per
// record) and analyzes the table.
func (b *hubsyncBench) load(ctx context.Context, n int) error {
	s := b.db.Store
	if _, err := b.db.SQL.ExecContext(ctx, "TRUNCATE _System_IntegrationOutbound"); err != nil {
		return fmt.Errorf("truncate: %w", err)
	}
	b.runs++
	prefix := "run" + strconv.Itoa(b.runs) + "-"
	if err := storetest.FillOutbound(ctx, s, destination, prefix, n, s.Now().Add(-time.Hour)); err != nil {
		return err
	}
	return storetest.Analyze(ctx, s)
}
