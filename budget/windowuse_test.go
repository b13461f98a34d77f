package budget

import (
	"context"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

func TestSQLWindowUse(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		db := dbtest.Migrated(t, d)
		clock := newClock()
		ctx := context.Background()
		b := newSQL(t, db, Config{Limit: 100, Window: 10 * time.Second, DailyLimit: 1000, Now: clock.Now})
		u, err := b.WindowUse(ctx, "k")
		if err != nil || u.Used != 0 || u.Limit != 100 || u.DailyLimit != 1000 || u.Window != 10*time.Second {
			t.Fatalf("WindowUse of an unused key = %+v, %v; want 0 of 100 per 10s", u, err)
		}
		for range 2 {
			if r, err := b.Reserve(ctx, "k", 7); err != nil || !r.Granted {
				t.Fatalf("Reserve = %+v, %v", r, err)
			}
		}
		if u, err = b.WindowUse(ctx, "k"); err != nil || u.Used != 14 || u.Booked != 0 || u.CallsToday != 14 || u.PausedUntil != nil {
			t.Fatalf("WindowUse after 14 calls = %+v, %v; want 14 used, 14 today, no pause", u, err)
		}
		// The window is 14 of 100 full for 10 s: a call booked 2 s ahead of a
		// full window shows as booked, not used, until its instant.
		if r, err := b.Reserve(ctx, "k", 86); err != nil || !r.Granted {
			t.Fatalf("Reserve(86) = %+v, %v", r, err)
		}
		clock.Advance(8 * time.Second)
		if r, err := b.Schedule(ctx, "k", 1, 3*time.Second); err != nil || !r.Granted || r.Wait == 0 {
			t.Fatalf("Schedule(1, 3s) = %+v, %v; want booked ahead", r, err)
		}
		if u, err = b.WindowUse(ctx, "k"); err != nil || u.Used != 100 || u.Booked != 1 {
			t.Fatalf("WindowUse with a call booked ahead = %+v, %v; want 100 used, 1 booked", u, err)
		}
		clock.Advance(3 * time.Second)
		if u, err = b.WindowUse(ctx, "k"); err != nil || u.Used != 1 || u.Booked != 0 {
			t.Fatalf("WindowUse after the booked instant = %+v, %v; want it used, none booked", u, err)
		}
		if err := b.Observe(ctx, "k", Observation{RateLimited: true, Policy: "TEN_SECONDLY_ROLLING", RetryAfter: 5 * time.Second}); err != nil {
			t.Fatal(err)
		}
		if u, err = b.WindowUse(ctx, "k"); err != nil || u.Used != 100 || u.PausedUntil == nil {
			t.Fatalf("WindowUse after a 429 = %+v, %v; want the window full and a pause", u, err)
		}
		clock.Advance(11 * time.Second)
		if u, err = b.WindowUse(ctx, "k"); err != nil || u.Used != 0 || u.PausedUntil != nil || u.CallsToday != 101 {
			t.Fatalf("WindowUse a window later = %+v, %v; want the window empty, no pause, today's 101 kept", u, err)
		}
		if _, err := b.WindowUse(ctx, ""); err == nil {
			t.Fatal("WindowUse of an empty key: want an error")
		}
	})
}

// TestSQLWindowUseShortAt: ShortAt is when the budget last refused a
// reservation, or booked one ahead because the window was full, for any
// caller, or a caller said it was (NoteShort); grants at once and bookings
// paced into a window with room leave it. Refusals are written at most once a
// second.
func TestSQLWindowUseShortAt(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		db := dbtest.Migrated(t, d)
		clock := newClock()
		ctx := context.Background()
		cfg := Config{Limit: 100, Window: 10 * time.Second, DailyLimit: -1, Pace: 2, Now: clock.Now}
		a, b := newSQL(t, db, cfg), newSQL(t, db, cfg) // two replicas
		shortAt := func() *time.Time {
			t.Helper()
			u, err := b.WindowUse(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			return u.ShortAt
		}
		wantShortAt := func(what string, want time.Time) {
			t.Helper()
			if got := shortAt(); got == nil || !got.Equal(want) {
				t.Fatalf("ShortAt %s = %v; want %s", what, got, want)
			}
		}
		grant := func(tokens int) {
			t.Helper()
			if r, err := a.Reserve(ctx, "k", tokens); err != nil || !r.Granted {
				t.Fatalf("Reserve(%d) = %+v, %v; want granted", tokens, r, err)
			}
		}
		refuse := func() {
			t.Helper()
			if r, err := a.Reserve(ctx, "k", 1); err != nil || r.Granted {
				t.Fatalf("Reserve(1) = %+v, %v; want refused", r, err)
			}
		}

		grant(2)
		if r, err := a.Schedule(ctx, "k", 1, time.Second); err != nil || !r.Granted || r.Wait == 0 || r.Full {
			t.Fatalf("a third call in the slice = %+v, %v; want booked ahead by pacing", r, err)
		}
		if got := shortAt(); got != nil {
			t.Fatalf("ShortAt after grants and a paced booking = %v; want none", got)
		}
		grant(97)
		refused := clock.Now()
		refuse()
		wantShortAt("after a refusal", refused)
		clock.Advance(500 * time.Millisecond)
		refuse()
		wantShortAt("half a second after a refusal, refused again", refused) // not written
		clock.Advance(500 * time.Millisecond)
		refuse()
		wantShortAt("a second after a refusal, refused again", clock.Now())
		clock.Advance(time.Second)
		if r, err := a.Schedule(ctx, "k", 1, 10*time.Second); err != nil || !r.Granted || !r.Full {
			t.Fatalf("Schedule into a full window = %+v, %v; want booked ahead, Full", r, err)
		}
		wantShortAt("after a booking the full window made wait", clock.Now())
		clock.Advance(30 * time.Second) // the window is empty again
		if err := a.NoteShort(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		wantShortAt("after NoteShort", clock.Now())
	})
}
