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

	elapsed, err := burnDown(n, workers, func(w int) (int, error) {
		p := store.ClaimParams{Key: destination, Limit: storetest.BenchBatchSize, LeaseDuration: time.Hour, Owner: "bench-" + strconv.Itoa(w)}
		evs, err := s.Outbound().Claim(ctx, p)
		if err != nil || len(evs) == 0 {
			return 0, err
		}
		ls := make([]store.Lease, len(evs))
		for i, ev := range evs {
			ls[i] = ev.Lease()
		}
		return len(evs), s.Outbound().Complete(ctx, ls...)
	})
	if err != nil {
		return 0, err
	}
	return float64(n) / elapsed.Seconds(), nil
}

// burnDown times workers goroutines each calling cycle (with its worker
// number) until the cycles have done n events in all, and returns the time
// it took or the first error. A cycle that finds nothing while work is left
// waits a millisecond: another worker holds the rest, and nothing is due
// before it completes.
func burnDown(n, workers int, cycle func(worker int) (int, error)) (time.Duration, error) {
	var (
		done  atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			for done.Load() < int64(n) {
				got, err := cycle(w)
				done.Add(int64(got))
				if err != nil {
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
					done.Store(int64(n))
					return
				}
				if got == 0 && done.Load() < int64(n) {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	return elapsedSince(start, time.Now()), first
}

// load empties the outbound queue and its record lanes, bulk-loads n
// pending events (one per record) and analyzes the table. Both tables are
// truncated, so that each run starts with no dead rows, as River's does
// (river.go truncates its job table): the events table's truncate trigger
// deletes the lanes row by row, and the dead lanes of every earlier run (a
// run deletes one lane per record) were left for autovacuum, slowing each
// later run's claims (the rounds of the twenty-fifth session's figures).
func (b *hubsyncBench) load(ctx context.Context, n int) error {
	s := b.db.Store
	if _, err := b.db.SQL.ExecContext(ctx, "TRUNCATE _System_IntegrationOutbound, hubsync_lane_outbound"); err != nil {
		return fmt.Errorf("truncate: %w", err)
	}
	b.runs++
	prefix := "run" + strconv.Itoa(b.runs) + "-"
	if err := storetest.FillOutbound(ctx, s, destination, prefix, n, s.Now().Add(-time.Hour)); err != nil {
		return err
	}
	return storetest.Analyze(ctx, s)
}
