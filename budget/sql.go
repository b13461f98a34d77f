package budget

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

//go:embed sql
var sqlFS embed.FS

// queries are one dialect's statements: sql/NAME.sql, overridden by
// sql/<dialect>/NAME.sql where the dialect needs other SQL.
type queries struct {
	ensure, lock, save, usage, window string
}

func loadQueries(d store.Dialect) (queries, error) {
	qs, err := dialectsql.Load(sqlFS, "sql", d)
	if err != nil {
		return queries{}, fmt.Errorf("budget: %w", err)
	}
	return queries{ensure: qs.Get("ensure"), lock: qs.Get("lock"), save: qs.Get("save"), usage: qs.Get("usage"), window: qs.Get("window")}, nil
}

// SQL is a Budget shared by every replica through the hubsync database (table
// hubsync_budget, migration 004).
//
// Each Reserve and Observe is one short transaction on the key's row: lock it
// (SELECT … FOR UPDATE on PostgreSQL and MySQL; on SQLite the transaction must be
// immediate, as sqlitestore.ParseURL configures it), read the clock, compute,
// write it back, commit. A refused Reserve writes nothing but, at most once a
// second, the instant the budget was short (WindowUse.ShortAt). Concurrent
// reservers, in any goroutine or process, therefore take turns on the row and
// can never together exceed the limit. Reservations on different keys do not
// contend.
type SQL struct {
	db      *sql.DB
	dialect store.Dialect
	cfg     Config
	q       queries
	known   sync.Map // keys whose row this instance has seen
}

var _ Scheduler = (*SQL)(nil)

// NewSQL returns a budget kept in db, which must be migrated (migrate.Up).
func NewSQL(db *sql.DB, dialect store.Dialect, cfg Config) (*SQL, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if db == nil {
		return nil, errors.New("budget: NewSQL needs a *sql.DB; open the hubsync database first")
	}
	q, err := loadQueries(dialect)
	if err != nil {
		return nil, err
	}
	return &SQL{db: db, dialect: dialect, cfg: cfg, q: q}, nil
}

// Reserve takes tokens from key's budget, or refuses with the time until enough
// frees up: the oldest counted calls leaving the window, the end of a pause, or
// the next midnight (Config.TimeZone) for the daily limit, whichever is latest. RetryAfter may
// exceed the exact time by up to 1% of the window (the bucket width) plus
// CallLead and a random part of up to RetrySpread, never fall short of it. A
// grant's calls must start by its UseBy. It fails with ErrTooManyTokens when tokens exceed key's limit.
func (b *SQL) Reserve(ctx context.Context, key string, tokens int) (Reservation, error) {
	l, err := b.cfg.limitsFor(key, tokens)
	if err != nil {
		return Reservation{}, err
	}
	var res Reservation
	err = b.update(ctx, key, l, func(s *state, now int64) bool {
		was := s.shortAt
		res = s.reserve(l, now, int64(tokens))
		return res.Granted || s.shortAt-was >= shortSaveEvery
	})
	if err != nil {
		return Reservation{}, fmt.Errorf("budget: reserve %d for %q: %w", tokens, key, err)
	}
	return res, nil
}

// Schedule books tokens from key's budget for the earliest moment within
// within from now (at most one Window) at which they fit, for every replica;
// see Scheduler. Like Reserve it is one short transaction on the key's row,
// so concurrent callers are booked one after another, in the order they take
// the row lock.
func (b *SQL) Schedule(ctx context.Context, key string, tokens int, within time.Duration) (Reservation, error) {
	l, err := b.cfg.limitsFor(key, tokens)
	if err != nil {
		return Reservation{}, err
	}
	var res Reservation
	err = b.update(ctx, key, l, func(s *state, now int64) bool {
		was := s.shortAt
		res = s.schedule(l, now, int64(tokens), l.ahead(within))
		return res.Granted || s.shortAt-was >= shortSaveEvery
	})
	if err != nil {
		return Reservation{}, fmt.Errorf("budget: schedule %d for %q: %w", tokens, key, err)
	}
	return res, nil
}

// Observe calibrates key's budget from a HubSpot answer, for every replica:
//
//   - When the rate-limit headers were present (Max > 0) and Remaining is lower
//     than what the budget has left in the window (Limit - counted), the
//     difference is counted as calls made now in the current window, so it leaves
//     the window one Window later. A higher Remaining is ignored: calls reserved
//     but not yet made explain it. Max and Interval are not used; the Config rules.
//   - Likewise, when DailyMax > 0 and DailyRemaining is lower than DailyLimit -
//     calls counted today, today's count becomes DailyLimit - DailyRemaining.
//   - On a 429 (RateLimited) with Policy DAILY: today's count becomes DailyLimit
//     and the key is paused until max(now + RetryAfter, next midnight in Config.TimeZone).
//   - On any other 429 (TEN_SECONDLY_ROLLING, SECONDLY, unknown): the window is
//     taken as full (the calls HubSpot counted that the budget did not see are
//     counted as made now) and the key is paused until max(now + RetryAfter, the
//     moment the oldest call counted in the window leaves it). With nothing of its
//     own in the window, that is a full Window (plus one bucket) from now.
func (b *SQL) Observe(ctx context.Context, key string, o Observation) error {
	l, err := b.cfg.limitsFor(key, 1)
	if err != nil {
		return fmt.Errorf("budget: observe: %w", err)
	}
	err = b.update(ctx, key, l, func(s *state, now int64) bool {
		s.observe(l, now, o)
		return true
	})
	if err != nil {
		return fmt.Errorf("budget: observe %q: %w", key, err)
	}
	return nil
}

var errRowMissing = errors.New("budget row missing")

// update runs fn on key's state in one transaction, holding the row lock. fn
// returns whether the state must be written back.
func (b *SQL) update(ctx context.Context, key string, l limits, fn func(s *state, now int64) bool) error {
	for {
		if _, ok := b.known.Load(key); !ok {
			// Outside the locking transaction: on MySQL an INSERT IGNORE before a
			// SELECT … FOR UPDATE in one transaction can deadlock with its twin.
			if _, err := b.db.ExecContext(ctx, b.q.ensure, key); err != nil {
				return fmt.Errorf("create row: %w", err)
			}
			b.known.Store(key, true)
		}
		err := b.updateTx(ctx, key, l, fn)
		if !errors.Is(err, errRowMissing) {
			return err
		}
		b.known.Delete(key) // an operator deleted the row: create it again
	}
}

func (b *SQL) updateTx(ctx context.Context, key string, l limits, fn func(s *state, now int64) bool) error {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	var (
		width, head, day, dayCount, paused, clock, short, dayEnd int64
		counts, zone                                             string
	)
	err = tx.QueryRowContext(ctx, b.q.lock, key).Scan(&width, &head, &counts, &day, &dayCount, &paused, &clock, &short, &dayEnd, &zone)
	if errors.Is(err, sql.ErrNoRows) {
		return errRowMissing
	}
	if err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	// Read the clock only while holding the lock, so that grants are recorded in
	// the order they were made.
	now := b.cfg.Now().UnixMicro()
	s, err := loadState(l, width, head, counts)
	if err != nil {
		return err
	}
	s.dayEnd, s.dayCount, s.pausedUntil, s.clock, s.shortAt, s.zone = dayEnd, dayCount, paused, clock, short, zone
	s.fromLegacyDay(day)
	if !fn(&s, now) {
		return nil // the deferred Rollback releases the lock
	}
	if _, err := tx.ExecContext(ctx, b.q.save, s.width, s.head, encodeCounts(s.counts), s.legacyDayNumber(), s.dayCount, s.pausedUntil, s.clock, s.shortAt, s.dayEnd, s.zone, key); err != nil {
		return fmt.Errorf("save: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
