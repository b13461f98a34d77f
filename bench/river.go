package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// Fetch settings of River's own burn-down benchmark (`river bench`): a short
// cooldown between fetches and a short poll, far faster than the client's
// defaults, which are tuned for latency at rest rather than throughput.
const (
	riverFetchCooldown     = 2 * time.Millisecond
	riverFetchPollInterval = 20 * time.Millisecond
	riverInsertBatch       = 5_000
)

// noopArgs are the benchmark's jobs; working one does nothing.
type noopArgs struct {
	Num int `json:"num"`
}

func (noopArgs) Kind() string { return "hubsync_bench_noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// riverBench runs River's burn-down on a migrated schema of its own.
type riverBench struct {
	pool   *pgxpool.Pool
	admin  *pgxpool.Pool
	schema string
	logger *slog.Logger
}

func newRiverBench(ctx context.Context, adminURL, schema string, logger *slog.Logger) (*riverBench, error) {
	admin, err := pgxpool.New(ctx, adminURL)
	if err != nil {
		return nil, fmt.Errorf("river: %w", err)
	}
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		admin.Close()
		return nil, fmt.Errorf("river: create schema: %w", err)
	}
	b := &riverBench{admin: admin, schema: schema, logger: logger}
	u, err := withSearchPath(adminURL, schema)
	if err == nil {
		b.pool, err = pgxpool.New(ctx, u)
	}
	if err == nil {
		err = migrateRiver(ctx, b.pool, schema, logger)
	}
	if err != nil {
		b.close()
		return nil, fmt.Errorf("river: %w", err)
	}
	return b, nil
}

func (b *riverBench) close() {
	if b.pool != nil {
		b.pool.Close()
	}
	b.admin.Exec(context.Background(), "DROP SCHEMA "+b.schema+" CASCADE")
	b.admin.Close()
}

// run empties River's job table, inserts n no-op jobs, then starts a client
// with maxWorkers workers and times it from Start to the n-th completion event.
func (b *riverBench) run(ctx context.Context, n, maxWorkers int) (float64, error) {
	if _, err := b.pool.Exec(ctx, "TRUNCATE river_job"); err != nil {
		return 0, fmt.Errorf("truncate: %w", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, noopWorker{})
	client, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{
		FetchCooldown:     riverFetchCooldown,
		FetchPollInterval: riverFetchPollInterval,
		Logger:            b.logger,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		Schema:            b.schema,
		Workers:           workers,
	})
	if err != nil {
		return 0, err
	}
	params := make([]river.InsertManyParams, 0, riverInsertBatch)
	for i := range n {
		params = append(params, river.InsertManyParams{Args: noopArgs{Num: i}})
		if len(params) == riverInsertBatch || i == n-1 {
			if _, err := client.InsertManyFast(ctx, params); err != nil {
				return 0, fmt.Errorf("insert jobs: %w", err)
			}
			params = params[:0]
		}
	}
	if _, err := b.pool.Exec(ctx, "ANALYZE river_job"); err != nil {
		return 0, fmt.Errorf("analyze: %w", err)
	}

	// Completion events, not the worker's own count: a job is done when the
	// completer has written it, as River's benchmark counts.
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: n,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled},
	})
	defer cancel()
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return 0, err
	}
	defer client.Stop(ctx)
	var last time.Time
	for done := 0; done < n; {
		select {
		case ev, ok := <-events:
			if !ok {
				return 0, fmt.Errorf("subscription closed after %d of %d jobs", done, n)
			}
			if ev.Kind != river.EventKindJobCompleted {
				return 0, fmt.Errorf("job %d: unexpected event %s", ev.Job.ID, ev.Kind)
			}
			done++
			last = time.Now()
		case <-time.After(time.Minute):
			return 0, fmt.Errorf("no job finished for a minute (%d of %d done)", done, n)
		}
	}
	return float64(n) / elapsedSince(start, last).Seconds(), nil
}

func migrateRiver(ctx context.Context, pool *pgxpool.Pool, schema string, logger *slog.Logger) error {
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: logger, Schema: schema})
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}
