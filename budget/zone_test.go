package budget

import (
	"context"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// In a zone whose clocks spring forward at midnight (America/Santiago on
// 2025-09-07: Sat 23:59:59 -04 -> Sun 01:00 -03; likewise America/Havana,
// Atlantic/Azores, America/Asuncion) the day of Saturday lasts until 04:00
// UTC. Once the day's count is full, the budget must refuse until then.
func TestDailyLimitHeldWhereMidnightIsSkipped(t *testing.T) {
	ctx := context.Background()
	zone, err := time.LoadLocation("America/Santiago")
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Date(2025, 9, 6, 22, 0, 0, 0, zone)} // 02:00 UTC
	m, err := NewMemory(Config{Limit: 10, Window: time.Second, DailyLimit: 15, TimeZone: zone, Now: clock.Now, CallLead: -1, RetrySpread: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 15; i++ {
		if r, err := m.Reserve(ctx, "k", 1); err != nil || !r.Granted {
			t.Fatalf("call %d: %+v %v", i, r, err)
		}
		clock.Advance(time.Second)
	}
	r, _ := m.Reserve(ctx, "k", 1)
	realEnd := time.Date(2025, 9, 7, 4, 0, 0, 0, time.UTC) // Sunday starts at 01:00 -03
	if r.Granted || clock.Now().Add(r.RetryAfter).Before(realEnd) {
		t.Errorf("at %s (Sat 22:00 local) with the day full: granted=%v, retry at %s; want refused until %s",
			clock.Now().In(zone), r.Granted, clock.Now().Add(r.RetryAfter).UTC(), realEnd)
	}
	// Sat 23:30 local, still Saturday: the day's count is still full.
	clock.t = time.Date(2025, 9, 6, 23, 30, 0, 0, zone)
	for i := 0; i < 5; i++ {
		r, _ := m.Reserve(ctx, "k", 1)
		if r.Granted {
			t.Fatalf("at %s (Saturday, day count full at %d): call %d granted; want refused until Sunday", clock.Now().In(zone), 15, 16+i)
		}
		clock.Advance(time.Second)
	}
}

// A day begun in UTC (a row written before days were zoned, or by a replica
// that could not learn the zone) at 01:00 UTC on Mar 5 (17:00 Mar 4 in Los
// Angeles) ends at the account's midnight, 08:00 UTC, for a replica that
// knows the zone: the day's calls are refused until then, granted after.
func TestRowOfUTCDaysResetsAtTheAccountsMidnight(t *testing.T) {
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	// legacy: the row as a version before DayEndMicros wrote it (a UTC day
	// number); otherwise as a replica that could not learn the zone wrote it
	// (a day ending at UTC midnight, no zone).
	for _, legacy := range []bool{true, false} {
		ctx := context.Background()
		db := dbtest.Migrated(t, store.SQLite)
		clock := &fakeClock{t: time.Date(2025, 3, 5, 1, 0, 0, 0, time.UTC)}
		old := newSQL(t, db, Config{Limit: 10, Window: time.Second, DailyLimit: 15, Now: clock.Now, CallLead: -1, RetrySpread: -1})
		for i := 0; i < 15; i++ {
			if r, err := old.Reserve(ctx, "k", 1); err != nil || !r.Granted {
				t.Fatalf("call %d: %+v %v", i, r, err)
			}
			clock.Advance(time.Second)
		}
		if legacy {
			if _, err := db.DB.Exec("UPDATE hubsync_budget SET DayEndMicros = 0, TimeZone = ''"); err != nil {
				t.Fatal(err)
			}
		}
		zoned := newSQL(t, db, Config{Limit: 10, Window: time.Second, DailyLimit: 15, TimeZone: la, Now: clock.Now, CallLead: -1, RetrySpread: -1})
		clock.t = time.Date(2025, 3, 5, 7, 59, 0, 0, time.UTC) // 23:59 Mar 4 in LA: still HubSpot's day
		if r, err := zoned.Reserve(ctx, "k", 1); err != nil || r.Granted {
			t.Fatalf("legacy %v: at %s (before the account's midnight) = %+v, %v; want refused, the day's 15 calls made", legacy, clock.Now().In(la), r, err)
		}
		clock.t = time.Date(2025, 3, 5, 9, 0, 0, 0, time.UTC) // 01:00 Mar 5 in LA: a new day for HubSpot
		r, err := zoned.Reserve(ctx, "k", 1)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Granted {
			t.Fatalf("legacy %v: at %s (after the account's midnight) refused for %s; want granted: a new day", legacy, clock.Now().In(la), r.RetryAfter)
		}
	}
}

// Two replicas share the budget row; one knows the account's zone (Tokyo),
// the other could not learn it (HubSpot did not answer its question at
// start: a timeout, a 5xx, or a DAILY 429). A DAILY 429 the second sees
// pauses the key until the account's next midnight (the day recorded in the
// row), not until midnight UTC.
func TestReplicaWithoutTheZoneKeepsTheAccountsDay(t *testing.T) {
	ctx := context.Background()
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	db := dbtest.Migrated(t, store.SQLite)
	clock := &fakeClock{t: time.Date(2025, 3, 4, 16, 0, 0, 0, time.UTC)}
	cfg := Config{Limit: 10, Window: time.Second, DailyLimit: 15, Now: clock.Now, CallLead: -1, RetrySpread: -1}
	zoned := cfg
	zoned.TimeZone = tokyo
	a := newSQL(t, db, zoned)
	b := newSQL(t, db, cfg) // UTC fallback
	if r, err := a.Reserve(ctx, "k", 5); err != nil || !r.Granted {
		t.Fatal(r, err)
	}
	clock.Advance(time.Second)
	if err := b.Observe(ctx, "k", Observation{RateLimited: true, Policy: PolicyDaily}); err != nil {
		t.Fatal(err)
	}
	next := time.Date(2025, 3, 5, 0, 0, 0, 0, tokyo).Add(24 * time.Hour) // Tokyo's next midnight: Mar 6 00:00 JST
	use, err := a.WindowUse(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if use.PausedUntil == nil || use.PausedUntil.After(next) {
		t.Fatalf("paused until %v (%s from now); want at most the account's next midnight %s", use.PausedUntil, use.PausedUntil.Sub(clock.Now()), next.UTC())
	}
}

// Usage (read without any zone, as `hubsync status` does) and WindowUse agree
// on a search key's calls today in a zone far from UTC.
func TestUsageAgreesWithWindowUseForSearchKey(t *testing.T) {
	ctx := context.Background()
	kiri, err := time.LoadLocation("Pacific/Kiritimati") // UTC+14: Mar 5 at 12:00 UTC Mar 4
	if err != nil {
		t.Fatal(err)
	}
	db := dbtest.Migrated(t, store.SQLite)
	clock := &fakeClock{t: clockStart}
	b := newSQL(t, db, Config{TimeZone: kiri, Now: clock.Now, CallLead: -1, RetrySpread: -1})
	key := "k" + SearchKeySuffix
	if r, err := b.Reserve(ctx, key, 2); err != nil || !r.Granted {
		t.Fatal(r, err)
	}
	use, err := b.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.WindowUse(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(use) != 1 || use[0].CallsToday != w.CallsToday {
		t.Fatalf("Usage calls today %+v; WindowUse %d: they disagree", use, w.CallsToday)
	}
}

// A replica that does not know the account's zone begins the next day at
// midnight in the zone another replica recorded in the row, not UTC's.
func TestNewDayInTheRecordedZone(t *testing.T) {
	ctx := context.Background()
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	db := dbtest.Migrated(t, store.SQLite)
	clock := &fakeClock{t: time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)} // 21:00 in Tokyo
	knows := newSQL(t, db, Config{TimeZone: tokyo, Now: clock.Now})
	unknown := newSQL(t, db, Config{Now: clock.Now})
	if _, err := knows.Reserve(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	clock.t = time.Date(2025, 3, 4, 16, 0, 0, 0, time.UTC) // 01:00 Mar 5 in Tokyo: a new day
	if r, err := unknown.Reserve(ctx, "k", 1); err != nil || !r.Granted {
		t.Fatalf("reserve = %+v, %v", r, err)
	}
	use, err := unknown.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2025, 3, 6, 0, 0, 0, 0, tokyo)
	if len(use) != 1 || use[0].DayEnds == nil || !use[0].DayEnds.Equal(want) || use[0].CallsToday != 1 || use[0].TimeZone != "Asia/Tokyo" {
		t.Fatalf("usage = %+v; want 1 call today, the day ending at Tokyo's midnight %s", use, want.UTC())
	}
}
