package demo

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

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
