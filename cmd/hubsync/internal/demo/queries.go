package demo

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"slices"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

//go:embed sql
var sqlFS embed.FS

// queries are the demo's read-only audit queries over the queues: the demo
// runs on SQLite, the chaos run on PostgreSQL or MySQL (their JSON
// differences live in sql/<dialect>/).
type queries struct {
	db *sql.DB
	q  *dialectsql.Queries
}

func newQueries(db *sql.DB, d store.Dialect) (*queries, error) {
	qs, err := dialectsql.Load(sqlFS, "sql", d)
	if err != nil {
		return nil, fmt.Errorf("demo: queries: %w", err)
	}
	return &queries{db: db, q: qs}, nil
}

// QueueCount counts one queue's events by status, and its failed attempts.
type QueueCount struct {
	ByStatus map[store.Status]int64
	// Retries sums the failed attempts of the queue's events (RetryCount).
	Retries int64
}

// Total is the number of events in the queue.
func (q QueueCount) Total() int64 {
	var n int64
	for _, c := range q.ByStatus {
		n += c
	}
	return n
}

// Open is the number of events still to do (pending or processing).
func (q QueueCount) Open() int64 {
	return q.ByStatus[store.StatusPending] + q.ByStatus[store.StatusProcessing]
}

func (q *queries) queueCounts(ctx context.Context) (map[store.Direction]QueueCount, error) {
	rows, err := q.db.QueryContext(ctx, q.q.Get("queue_counts"))
	if err != nil {
		return nil, fmt.Errorf("demo: count queues: %w", err)
	}
	defer rows.Close()
	out := map[store.Direction]QueueCount{}
	for _, d := range []store.Direction{store.DirectionInbound, store.DirectionOutbound, store.DirectionInternal} {
		out[d] = QueueCount{ByStatus: map[store.Status]int64{}}
	}
	for rows.Next() {
		var (
			d          store.Direction
			s          store.Status
			n, retries int64
		)
		if err := rows.Scan(&d, &s, &n, &retries); err != nil {
			return nil, fmt.Errorf("demo: count queues: %w", err)
		}
		c := out[d]
		c.ByStatus[s] += n
		c.Retries += retries
		out[d] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("demo: count queues: %w", err)
	}
	return out, nil
}

func (q *queries) count(ctx context.Context, name string, args ...any) (int64, error) {
	var n int64
	if err := q.db.QueryRowContext(ctx, q.q.Get(name), args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("demo: %s: %w", name, err)
	}
	return n, nil
}

// syncedWrites lists the local records written by the inbound sync from source,
// as "objectType/recordID", with how many writes each.
func (q *queries) syncedWrites(ctx context.Context, source string) (map[string]int, error) {
	rows, err := q.db.QueryContext(ctx, q.q.Get("synced_writes"), source)
	if err != nil {
		return nil, fmt.Errorf("demo: synced writes: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var t, id string
		if err := rows.Scan(&t, &id); err != nil {
			return nil, fmt.Errorf("demo: synced writes: %w", err)
		}
		out[t+"/"+id]++
	}
	return out, rows.Err()
}

// recordOutbound counts one record's outbound events still to do and failed.
func (q *queries) recordOutbound(ctx context.Context, objectType, recordID string) (open, failed int64, err error) {
	rows, err := q.db.QueryContext(ctx, q.q.Get("record_outbound_open"), objectType, recordID)
	if err != nil {
		return 0, 0, fmt.Errorf("demo: outbound of %s/%s: %w", objectType, recordID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			s store.Status
			n int64
		)
		if err := rows.Scan(&s, &n); err != nil {
			return 0, 0, fmt.Errorf("demo: outbound of %s/%s: %w", objectType, recordID, err)
		}
		switch s {
		case store.StatusPending, store.StatusProcessing:
			open += n
		case store.StatusFailed:
			failed += n
		}
	}
	return open, failed, rows.Err()
}

// Latency summarises how long events took, queued to processed.
type Latency struct {
	N             int
	P50, P99, Max time.Duration
}

func (l Latency) String() string {
	if l.N == 0 {
		return "none"
	}
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("p50 %s, p99 %s, max %s over %d events", r(l.P50), r(l.P99), r(l.Max), l.N)
}

func latencyOf(ms []float64) Latency {
	if len(ms) == 0 {
		return Latency{}
	}
	slices.Sort(ms)
	at := func(q float64) time.Duration {
		return time.Duration(ms[min(len(ms)-1, int(q*float64(len(ms))))] * float64(time.Millisecond))
	}
	return Latency{N: len(ms), P50: at(0.50), P99: at(0.99), Max: at(1)}
}

// queueLatency summarises the processed events' time from queued to
// processed: inbound and outbound, and, of the outbound ones, those claimed
// more than once without a failed attempt (their lease was lost with a
// killed replica, or they were released for the budget), which is how long a
// crash delays a change.
func (q *queries) queueLatency(ctx context.Context) (inbound, outbound, reclaimed Latency, err error) {
	rows, err := q.db.QueryContext(ctx, q.q.Get("queue_latency"))
	if err != nil {
		return inbound, outbound, reclaimed, fmt.Errorf("demo: queue latency: %w", err)
	}
	defer rows.Close()
	var in, out, again []float64
	for rows.Next() {
		var dir string
		var ms float64
		var attempt, retries int
		if err := rows.Scan(&dir, &ms, &attempt, &retries); err != nil {
			return inbound, outbound, reclaimed, fmt.Errorf("demo: queue latency: %w", err)
		}
		if dir == "inbound" {
			in = append(in, ms)
			continue
		}
		out = append(out, ms)
		if attempt > retries+1 {
			again = append(again, ms)
		}
	}
	if err := rows.Err(); err != nil {
		return inbound, outbound, reclaimed, fmt.Errorf("demo: queue latency: %w", err)
	}
	return latencyOf(in), latencyOf(out), latencyOf(again), nil
}
