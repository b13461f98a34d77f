package storetest

import (
	"cmp"
	"context"
	"embed"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

//go:embed sql
var sqlFS embed.FS

// BenchStoreFunc opens a store on a fresh, migrated database for a benchmark.
type BenchStoreFunc func(b *testing.B, cfg store.Config) store.Store

// BenchBatchSize is the claim limit of the benchmarks.
const BenchBatchSize = 100

const benchDestination = "hubspot"

// FillOutbound bulk-loads n pending outbound events of destination, one per
// record, in a single INSERT … SELECT (generate_series on PostgreSQL, a recursive
// CTE on SQLite, the SEQUENCE engine on MariaDB). Event i is created at base + i
// microseconds and has id idPrefix followed by i zero-padded, so prefixes must
// differ between fills of one database. Enqueue is far too slow for a backlog of
// a million rows.
func FillOutbound(ctx context.Context, s store.Store, destination, idPrefix string, n int, base time.Time) error {
	return FillOutboundRecords(ctx, s, destination, idPrefix, n, n, base)
}

// FillOutboundRecords is FillOutbound with the n events spread round-robin over
// records records: event i (from 1) belongs to record idPrefix followed by
// (i-1)%records+1, so each record's events interleave with the others' in
// creation order, as the changes of hot records do. Each event's Seq and Lane
// is its place among its record's events; the records' sequence counters
// (hubsync_record_seq) are not advanced, so do not Enqueue onto filled records.
func FillOutboundRecords(ctx context.Context, s store.Store, destination, idPrefix string, n, records int, base time.Time) error {
	if records < 1 {
		return fmt.Errorf("fill outbound: records must be at least 1, got %d", records)
	}
	qs, err := dialectsql.Load(sqlFS, "sql", s.Dialect())
	if err != nil {
		return fmt.Errorf("fill outbound: %w", err)
	}
	text := qs.Get("fill_outbound")
	base = base.UTC().Truncate(time.Microsecond)
	var args []any
	switch s.Dialect() {
	case store.SQLite, store.Postgres:
		args = []any{n, destination, idPrefix, dialectsql.Time(s.Dialect(), base), records}
	case store.MySQL:
		args = []any{destination, idPrefix, base.Format("2006-01-02 15:04:05.999999"), records, n}
	}
	if _, err := s.DB().ExecContext(ctx, text, args...); err != nil {
		return fmt.Errorf("fill outbound (%d rows): %w", n, err)
	}
	return nil
}

// Analyze refreshes the planner statistics of the queue tables.
func Analyze(ctx context.Context, s store.Store) error {
	var stmts []string
	switch s.Dialect() {
	case store.SQLite:
		stmts = []string{"ANALYZE"}
	case store.Postgres:
		stmts = []string{"ANALYZE _System_IntegrationOutbound"}
	case store.MySQL:
		stmts = []string{"ANALYZE TABLE _System_IntegrationOutbound"}
	}
	for _, q := range stmts {
		rows, err := s.DB().QueryContext(ctx, q) // MySQL's ANALYZE TABLE returns a result set
		if err != nil {
			return fmt.Errorf("analyze: %w", err)
		}
		rows.Close()
	}
	return nil
}

// BenchmarkClaimComplete measures outbound claim→complete throughput: batches of
// BenchBatchSize, no work between claim and complete, with 1 and 4 concurrent
// workers. b.N is the number of events; the events/s metric is the result. The
// events are bulk-loaded before the timer starts, one per record, so per-record
// exclusivity never holds a worker back.
func BenchmarkClaimComplete(b *testing.B, newStore BenchStoreFunc) {
	for _, workers := range []int{1, 4} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			ctx := context.Background()
			s := newStore(b, store.Config{})
			if err := FillOutbound(ctx, s, benchDestination, "ev-", b.N, s.Now().Add(-time.Hour)); err != nil {
				b.Fatal(err)
			}
			if err := Analyze(ctx, s); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			p := store.ClaimParams{Key: benchDestination, Limit: BenchBatchSize, LeaseDuration: time.Hour}
			_, _, err := claimCompleteWorkers(ctx, s, workers, "bench-", p, int64(b.N), time.Time{})
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkClaimLatency measures one Claim(limit BenchBatchSize) plus the Complete
// of what it claimed, on an outbound queue kept at backlog pending events (each
// iteration's events are replaced, outside the timer, by as many new ones at the
// tail). Completed rows stay in the table, as they do between cleanups. Compare
// the claim-us metric across backlogs: a claim that walks the backlog or the
// finished rows grows with them.
func BenchmarkClaimLatency(b *testing.B, newStore BenchStoreFunc, backlog int) {
	ctx := context.Background()
	s := newStore(b, store.Config{})
	base := s.Now().Add(-24 * time.Hour)
	if err := FillOutbound(ctx, s, benchDestination, "backlog-", backlog, base); err != nil {
		b.Fatal(err)
	}
	if err := Analyze(ctx, s); err != nil {
		b.Fatal(err)
	}
	next := base.Add(time.Duration(backlog+1) * time.Microsecond)
	refill := 0
	b.Run("backlog="+strconv.Itoa(backlog), func(b *testing.B) {
		var claimTime time.Duration
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			evs, err := s.Outbound().Claim(ctx, store.ClaimParams{Key: benchDestination, Limit: BenchBatchSize, LeaseDuration: time.Hour, Owner: "bench"})
			claimTime += time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			if len(evs) != BenchBatchSize {
				b.Fatalf("claimed %d events from a backlog of %d, want %d", len(evs), backlog, BenchBatchSize)
			}
			ls := make([]store.Lease, len(evs))
			for i, ev := range evs {
				ls[i] = ev.Lease()
			}
			if err := s.Outbound().Complete(ctx, ls...); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			refill++
			if err := FillOutbound(ctx, s, benchDestination, "r"+strconv.Itoa(refill)+"-", len(evs), next); err != nil {
				b.Fatal(err)
			}
			next = next.Add(time.Duration(len(evs)+1) * time.Microsecond)
			b.StartTimer()
		}
		b.ReportMetric(float64(claimTime.Microseconds())/float64(b.N), "claim-us")
	})
}

// HotClaimConfig shapes BenchmarkHotClaim. Zero fields take the defaults.
type HotClaimConfig struct {
	// Events is the backlog of pending outbound events; default 50,000.
	Events int
	// Records is how many records the events are spread over, round-robin;
	// default Events (one event per record).
	Records int
	// Workers is how many goroutines claim and complete concurrently; default 1.
	Workers int
	// MaxPerRecord is the claims' ClaimParams.MaxPerRecord; 0 is the store's default.
	MaxPerRecord int
	// MaxDuration ends a drain that has not finished by then (a pathological
	// claim can take minutes); default one minute. Events/s counts what was done.
	MaxDuration time.Duration
}

func (c HotClaimConfig) withDefaults() HotClaimConfig {
	c.Events = cmp.Or(c.Events, 50_000)
	c.Records = cmp.Or(c.Records, c.Events)
	c.Workers = cmp.Or(c.Workers, 1)
	c.MaxDuration = cmp.Or(c.MaxDuration, time.Minute)
	return c
}

// BenchmarkHotClaim measures claims on a backlog whose events crowd onto few
// records, under concurrent claimers: each iteration bulk-loads cfg.Events
// pending outbound events over cfg.Records records (outside the timer), then
// cfg.Workers goroutines Claim(limit BenchBatchSize) and Complete what they got
// until the backlog is drained or cfg.MaxDuration has passed. Completed rows stay
// in the table. It reports the claim latency's median and 99th percentile
// (claim-p50-ms, claim-p99-ms, over all claims including those that found
// nothing because every record was leased), events/s, and claims per iteration.
// A claim whose cost follows the backlog depth of hot records rather than what
// it hands out shows here and not in BenchmarkClaimComplete.
func BenchmarkHotClaim(b *testing.B, newStore BenchStoreFunc, cfg HotClaimConfig) {
	cfg = cfg.withDefaults()
	ctx := context.Background()
	s := newStore(b, store.Config{})
	base := s.Now().Add(-24 * time.Hour)
	var (
		lat     []time.Duration
		total   int64
		elapsed time.Duration
	)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		prefix := "i" + strconv.Itoa(i) + "-"
		if err := FillOutboundRecords(ctx, s, benchDestination, prefix, cfg.Events, cfg.Records, base); err != nil {
			b.Fatal(err)
		}
		base = base.Add(time.Duration(cfg.Events+1) * time.Microsecond)
		if err := Analyze(ctx, s); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		p := store.ClaimParams{Key: benchDestination, Limit: BenchBatchSize, MaxPerRecord: cfg.MaxPerRecord, LeaseDuration: time.Hour}
		done, claims, err := claimCompleteWorkers(ctx, s, cfg.Workers, "hot-", p, int64(cfg.Events), start.Add(cfg.MaxDuration))
		lat = append(lat, claims...)
		elapsed += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		total += done
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "claim-p50-ms")
	b.ReportMetric(pct(0.99), "claim-p99-ms")
	b.ReportMetric(float64(total)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(len(lat))/float64(b.N), "claims/op")
}

// claimCompleteWorkers runs workers goroutines that claim with p (Owner set to
// ownerPrefix+n) and complete each batch at once, until target events are done,
// the deadline passes (zero: none) or one fails. It returns the events
// completed, every Claim's latency, and the first error.
func claimCompleteWorkers(ctx context.Context, s store.Store, workers int, ownerPrefix string, p store.ClaimParams, target int64, deadline time.Time) (int64, []time.Duration, error) {
	var (
		done  atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		lat   []time.Duration
	)
	stop := func() bool {
		return done.Load() >= target || (!deadline.IsZero() && time.Now().After(deadline))
	}
	for w := range workers {
		p := p
		p.Owner = ownerPrefix + strconv.Itoa(w)
		wg.Go(func() {
			var mine []time.Duration
			defer func() {
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
			for !stop() {
				t0 := time.Now()
				evs, err := s.Outbound().Claim(ctx, p)
				mine = append(mine, time.Since(t0))
				if err == nil && len(evs) > 0 {
					ls := make([]store.Lease, len(evs))
					for i, ev := range evs {
						ls[i] = ev.Lease()
					}
					err = s.Outbound().Complete(ctx, ls...)
					done.Add(int64(len(evs)))
				}
				if err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
					done.Store(target) // stop the others
					return
				}
				if len(evs) == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	wg.Wait()
	return done.Load(), lat, first
}
