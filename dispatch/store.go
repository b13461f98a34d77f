package dispatch

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

//go:embed sql
var sqlFS embed.FS

// Publish states (the PublishStatus column); "" is not published yet.
const (
	PublishPublishing = "publishing"
	PublishPublished  = "published"
	PublishRetry      = "publish_retry"
)

// DedupID is the deduplication id of an event's publish of a generation: the
// event id for the first, "<id>.r<n>" after the sweep's n-th re-publish, so
// that a re-publish never collides with a message still in QStash's window.
func DedupID(eventID string, generation int) string {
	if generation == 0 {
		return eventID
	}
	return eventID + ".r" + strconv.Itoa(generation)
}

// PublishState is an event's publishing bookkeeping.
type PublishState struct {
	ID          string
	Attempts    int
	Generation  int
	Status      string
	MessageID   string
	PublishedAt *time.Time
}

// claimed is one event a publisher claimed.
type claimed struct {
	id         string
	attempts   int
	generation int
}

// pubStore runs the package's SQL on the store's database.
type pubStore struct {
	st store.Store
	db *sql.DB
	d  store.Dialect
	q  *dialectsql.Queries
}

func newPubStore(st store.Store) (*pubStore, error) {
	q, err := dialectsql.Load(sqlFS, "sql", st.Dialect())
	if err != nil {
		return nil, err
	}
	return &pubStore{st: st, db: st.DB(), d: st.Dialect(), q: q}, nil
}

func (p *pubStore) t(t time.Time) any { return dialectsql.Time(p.d, t) }

// claim takes up to limit due, unpublished events of key for leaseFor.
func (p *pubStore) claim(ctx context.Context, key string, limit int, leaseFor time.Duration) ([]claimed, error) {
	now := p.st.Now()
	lease := p.t(now.Add(leaseFor))
	scan := func(rows *sql.Rows, err error) ([]claimed, error) {
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []claimed
		for rows.Next() {
			var c claimed
			if err := rows.Scan(&c.id, &c.attempts, &c.generation); err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, rows.Err()
	}
	var out []claimed
	var err error
	switch p.d {
	case store.SQLite:
		out, err = scan(p.db.QueryContext(ctx, p.q.Get("publish_claim"), lease, key, p.t(now), p.t(now), limit))
	case store.Postgres:
		out, err = scan(p.db.QueryContext(ctx, p.q.Get("publish_claim"), key, p.t(now), p.t(now), limit, lease))
	default:
		err = dialectsql.InTxRetry(ctx, p.db, p.st.Retryable, "publish claim", func(tx *sql.Tx) error {
			out = out[:0]
			rows, err := tx.QueryContext(ctx, p.q.Get("publish_lock"), key, p.t(now), p.t(now), limit)
			if err != nil {
				return err
			}
			var ids []string
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return err
				}
				ids = append(ids, id)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, id := range ids {
				if _, err := tx.ExecContext(ctx, p.q.Get("publish_take"), lease, id); err != nil {
					return err
				}
				var c claimed
				var published *time.Time
				if err := tx.QueryRowContext(ctx, p.q.Get("publish_state"), id).Scan(&c.id, &c.attempts, &c.generation, new(string), new(string), dialectsql.NullTimeDest(&published)); err != nil {
					return err
				}
				out = append(out, c)
			}
			return nil
		})
	}
	if err != nil {
		return nil, fmt.Errorf("dispatch: claim to publish: %w", err)
	}
	return out, nil
}

// errFenced: the claim was taken over (its publish lease expired); the
// other publisher's outcome stands.
var errFenced = errors.New("dispatch: publish claim taken over")

func (p *pubStore) exec1(ctx context.Context, name string, args ...any) error {
	res, err := p.db.ExecContext(ctx, p.q.Get(name), args...)
	if err != nil {
		return fmt.Errorf("dispatch: %s: %w", name, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return errFenced
	}
	return nil
}

func (p *pubStore) markPublished(ctx context.Context, c claimed, messageID string) error {
	return p.exec1(ctx, "publish_mark", messageID, p.t(p.st.Now()), c.id, c.attempts)
}

func (p *pubStore) markRetry(ctx context.Context, c claimed, next time.Time, msg string) error {
	return p.exec1(ctx, "publish_retry", p.t(next), msg, c.id, c.attempts)
}

// republish gives an unfinished event published at or before cutoff a new
// generation; false when it was not in that state.
func (p *pubStore) republish(ctx context.Context, id string, cutoff time.Time) (bool, error) {
	err := p.exec1(ctx, "republish", id, p.t(cutoff))
	if errors.Is(err, errFenced) {
		return false, nil
	}
	return err == nil, err
}

// State reads an event's publishing bookkeeping; store.ErrNotFound when absent.
func (p *pubStore) state(ctx context.Context, id string) (PublishState, error) {
	var s PublishState
	err := p.db.QueryRowContext(ctx, p.q.Get("publish_state"), id).Scan(&s.ID, &s.Attempts, &s.Generation, &s.Status, &s.MessageID, dialectsql.NullTimeDest(&s.PublishedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return s, store.ErrNotFound
	}
	if err != nil {
		return s, fmt.Errorf("dispatch: publish state %s: %w", id, err)
	}
	return s, nil
}

// head is the earliest unfinished event of a record.
type head struct {
	id           string
	status       store.Status
	next         time.Time
	leaseExpires *time.Time
}

// recordHead returns the earliest unfinished event of ev's record before ev.
func (p *pubStore) recordHead(ctx context.Context, ev store.OutboundEvent) (head, bool, error) {
	var h head
	var status string
	err := p.db.QueryRowContext(ctx, p.q.Get("record_head"), ev.Destination, ev.ObjectType, ev.RecordID, ev.Lane).
		Scan(&h.id, &status, dialectsql.TimeDest(&h.next), dialectsql.NullTimeDest(&h.leaseExpires))
	if errors.Is(err, sql.ErrNoRows) {
		return h, false, nil
	}
	if err != nil {
		return h, false, fmt.Errorf("dispatch: record head of %s: %w", ev.ID, err)
	}
	h.status = store.Status(status)
	return h, true, nil
}

// ReadPublishState reads an event's publishing bookkeeping from st, for
// operators and tests; store.ErrNotFound when absent.
func ReadPublishState(ctx context.Context, st store.Store, id string) (PublishState, error) {
	p, err := newPubStore(st)
	if err != nil {
		return PublishState{}, err
	}
	return p.state(ctx, id)
}
