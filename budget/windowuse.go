package budget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// WindowUse is what one key's budget holds right now, for operators: the
// calls counted in the rolling window against its limit, today's calls
// against the daily limit, and any pause in force.
type WindowUse struct {
	Key string `json:"key"`
	// Used is the calls counted in the rolling window ending now; Limit and
	// Window are the key's limit.
	Used   int64         `json:"used"`
	Limit  int64         `json:"limit"`
	Window time.Duration `json:"window_ns"`
	// Booked counts the calls granted for a later instant (booked ahead,
	// Scheduler.Schedule) that are not in Used yet: they join the window
	// at their instant, within a window from now.
	Booked int64 `json:"booked"`
	// CallsToday counts the calls granted since midnight (Config.TimeZone); DailyLimit is
	// negative when there is none.
	CallsToday int64 `json:"calls_today"`
	DailyLimit int64 `json:"daily_limit"`
	// PausedUntil is set while the key is paused after a 429.
	PausedUntil *time.Time `json:"paused_until,omitempty"`
	// ShortAt is when the budget was last short for a caller, whichever
	// replica it was: it refused a reservation (recorded at most once a
	// second), booked one ahead because the window had no room
	// (Reservation.Full), or a caller said so (NoteShort). Nil when it never
	// was. Outbound workers hold their calls for a while after it
	// (outbound.HoldFor).
	ShortAt *time.Time `json:"short_at,omitempty"`
}

// WindowUse reads key's budget without changing it or locking it. A key that
// has never reserved anything reads as empty.
func (b *SQL) WindowUse(ctx context.Context, key string) (WindowUse, error) {
	l, err := b.cfg.limitsFor(key, 1)
	if err != nil {
		return WindowUse{}, fmt.Errorf("budget: window use: %w", err)
	}
	u := WindowUse{Key: key, Limit: l.limit, Window: time.Duration(l.window) * time.Microsecond, DailyLimit: l.daily}
	s, found, err := b.read(ctx, l, key)
	if err != nil || !found {
		return u, err
	}
	now := b.cfg.Now().UnixMicro()
	eff := s.advance(l, now)
	cur := floorDiv(eff, l.width)
	u.Used, u.CallsToday = s.used(l, cur), s.dayCount
	for b := cur + 1; b <= s.head; b++ {
		u.Booked += s.at(b)
	}
	if s.pausedUntil > now {
		t := time.UnixMicro(s.pausedUntil).UTC()
		u.PausedUntil = &t
	}
	if s.shortAt != 0 {
		t := time.UnixMicro(s.shortAt).UTC()
		u.ShortAt = &t
	}
	return u, nil
}

// NoteShort records now as an instant at which key's budget was short
// (WindowUse.ShortAt), for every replica: for a caller that judged it so by
// its own measure, such as an outbound worker that found the window a quarter
// full and holds its calls for fuller batches. Refusals and bookings that
// waited for room are recorded by the budget itself.
func (b *SQL) NoteShort(ctx context.Context, key string) error {
	l, err := b.cfg.limitsFor(key, 1)
	if err != nil {
		return fmt.Errorf("budget: note short: %w", err)
	}
	err = b.update(ctx, key, l, func(s *state, now int64) bool {
		s.shortAt = s.advance(l, now)
		return true
	})
	if err != nil {
		return fmt.Errorf("budget: note short %q: %w", key, err)
	}
	return nil
}

// Paused returns how long key stays paused from now, for every replica; see
// Scheduler. It reads the key's row without locking it.
func (b *SQL) Paused(ctx context.Context, key string) (time.Duration, error) {
	l, err := b.cfg.limitsFor(key, 1)
	if err != nil {
		return 0, fmt.Errorf("budget: paused: %w", err)
	}
	s, _, err := b.read(ctx, l, key)
	if err != nil {
		return 0, err
	}
	return pausedFor(s.pausedUntil, b.cfg.Now().UnixMicro()), nil
}

// read loads key's stored state for limits l without locking its row;
// found is false for a key that has never reserved anything.
func (b *SQL) read(ctx context.Context, l limits, key string) (s state, found bool, err error) {
	var (
		width, head, day, dayCount, paused, clock, short, dayEnd int64
		counts, zone                                             string
	)
	err = b.db.QueryRowContext(ctx, b.q.window, key).Scan(&width, &head, &counts, &day, &dayCount, &paused, &clock, &short, &dayEnd, &zone)
	if errors.Is(err, sql.ErrNoRows) {
		return state{}, false, nil
	}
	if err != nil {
		return state{}, false, fmt.Errorf("budget: read the window of %q: %w", key, err)
	}
	if s, err = loadState(l, width, head, counts); err != nil {
		return state{}, false, err
	}
	s.dayEnd, s.dayCount, s.pausedUntil, s.clock, s.shortAt, s.zone = dayEnd, dayCount, paused, clock, short, zone
	s.fromLegacyDay(day)
	return s, true, nil
}
