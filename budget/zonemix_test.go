package budget

import (
	"context"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// reserveTurns has the replicas take turns reserving one token, a minute
// apart, every hour for hours, and returns how many were granted.
// reserveTurns has each replica reserve one call, a minute apart, every hour
// for hours hours; it returns how many were granted.
func reserveTurns(t *testing.T, clock *fakeClock, hours int, rs ...*SQL) int {
	t.Helper()
	granted := 0
	for i := 0; i < hours; i++ {
		for _, r := range rs {
			res, err := r.Reserve(context.Background(), "k", 1)
			if err != nil {
				t.Fatal(err)
			}
			if res.Granted {
				granted++
			}
			clock.Advance(time.Minute)
		}
		clock.Advance(time.Hour - time.Duration(len(rs))*time.Minute)
	}
	return granted
}

// One zone under two names: HubSpot reports "US/Eastern" (hubspot/account.go)
// to the replicas that ask, the operator set HUBSYNC_HUBSPOT_TIME_ZONE=
// America/New_York on others. On the 23-hour day of the spring DST change,
// advance's "the day began at dayEnd-24h" is an hour early, so each turn of
// the other name ends the day at its start: the count is reset at every turn.
// One zone under two names (HubSpot says US/Eastern, an operator set
// America/New_York) on a 23-hour day: replicas taking turns hold the daily
// limit.
func TestOneZoneTwoNamesOnADSTDay(t *testing.T) {
	eastern, err1 := time.LoadLocation("US/Eastern")
	ny, err2 := time.LoadLocation("America/New_York")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	db := dbtest.Migrated(t, store.SQLite)
	clock := &fakeClock{t: time.Date(2025, 3, 9, 6, 0, 0, 0, time.UTC)} // 01:00 EST, Sun Mar 9 (23 h long)
	cfg := Config{Limit: 10, Window: time.Second, DailyLimit: 10, Now: clock.Now, CallLead: -1, RetrySpread: -1}
	a, b := cfg, cfg
	a.TimeZone, b.TimeZone = eastern, ny
	// 06:00 to 18:00 UTC, all within Mar 9 in New York.
	if granted := reserveTurns(t, clock, 12, newSQL(t, db, a), newSQL(t, db, b)); granted > 10 {
		t.Fatalf("granted %d calls within one New York day, DailyLimit 10", granted)
	}
}

// Two replicas told different zones (Config.TimeZone says they "agree on each
// day, whoever began it"). From 16:00 to 04:00 UTC neither Tokyo's midnight
// (15:00 UTC) nor New York's (05:00 UTC) passes, yet each turn of the Tokyo
// replica moves the day's end into the past and resets the count.
// Replicas told different zones (a misconfiguration) hold the daily limit:
// the day a zone began is ended by that zone.
func TestReplicasWithDifferentZonesHoldTheDailyLimit(t *testing.T) {
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	ny, _ := time.LoadLocation("America/New_York")
	db := dbtest.Migrated(t, store.SQLite)
	clock := &fakeClock{t: time.Date(2025, 3, 4, 16, 0, 0, 0, time.UTC)}
	cfg := Config{Limit: 10, Window: time.Second, DailyLimit: 10, Now: clock.Now, CallLead: -1, RetrySpread: -1}
	a, b := cfg, cfg
	a.TimeZone, b.TimeZone = tokyo, ny
	if granted := reserveTurns(t, clock, 12, newSQL(t, db, a), newSQL(t, db, b)); granted > 10 {
		t.Fatalf("granted %d calls in 12 h in which no midnight of either zone passed, DailyLimit 10", granted)
	}
}

// A replica of a version before DayEndMicros (UTC days, DayNumber only)
// begins a new UTC day and counts 8 calls in it, during a rolling upgrade:
// a new replica keeps that count, it does not take the day for over.
func TestRollingUpgradeKeepsAnOlderReplicasDay(t *testing.T) {
	ctx := context.Background()
	db := dbtest.Migrated(t, store.SQLite)
	clock := &fakeClock{t: time.Date(2025, 3, 4, 23, 0, 0, 0, time.UTC)}
	nw := newSQL(t, db, Config{Limit: 10, Window: time.Second, DailyLimit: 10, TimeZone: time.UTC, Now: clock.Now, CallLead: -1, RetrySpread: -1})
	if r, err := nw.Reserve(ctx, "k", 10); err != nil || !r.Granted {
		t.Fatal(r, err)
	}
	clock.t = time.Date(2025, 3, 5, 1, 0, 0, 0, time.UTC) // a new day
	// What the older version writes when it begins Mar 5 and grants 8.
	day := time.Date(2025, 3, 5, 0, 0, 0, 0, time.UTC).Unix() / 86400
	if _, err := db.DB.Exec("UPDATE hubsync_budget SET DayNumber = ?, DayCount = 8, ClockMicros = ? WHERE BudgetKey = 'k'", day, clock.Now().UnixMicro()); err != nil {
		t.Fatal(err)
	}
	granted := 8
	for range 20 {
		clock.Advance(time.Second)
		r, err := nw.Reserve(ctx, "k", 1)
		if err != nil {
			t.Fatal(err)
		}
		if r.Granted {
			granted++
		}
	}
	if granted != 10 {
		t.Fatalf("granted %d calls on Mar 5, DailyLimit 10: the new replica must keep the older one's 8 and grant 2", granted)
	}
}

// A row of UTC days whose calls came after the account's midnight (10:00 in
// New York, its Dec 3) keeps its count once a replica that knows the zone
// sees it: the day then ends at New York's next midnight.
func TestUTCDayAfterTheAccountsMidnightKeepsItsCount(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db := dbtest.Migrated(t, store.SQLite)
	clock := &fakeClock{t: time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)} // 10:00 in New York, Dec 3
	old := newSQL(t, db, Config{Limit: 10, Window: time.Second, DailyLimit: 15, Now: clock.Now, CallLead: -1, RetrySpread: -1})
	for range 15 {
		if r, err := old.Reserve(ctx, "k", 1); err != nil || !r.Granted {
			t.Fatalf("reserve: %+v %v", r, err)
		}
		clock.Advance(time.Second)
	}
	if _, err := db.DB.Exec("UPDATE hubsync_budget SET DayEndMicros = 0, TimeZone = ''"); err != nil {
		t.Fatal(err)
	}
	zoned := newSQL(t, db, Config{Limit: 10, Window: time.Second, DailyLimit: 15, TimeZone: ny, Now: clock.Now, CallLead: -1, RetrySpread: -1})
	clock.t = time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC) // 11:00 in New York, the same day
	if r, err := zoned.Reserve(ctx, "k", 1); err != nil || r.Granted {
		t.Fatalf("a 16th call in New York's Dec 3 = %+v, %v; want refused", r, err)
	}
	clock.t = time.Date(2026, 12, 4, 5, 0, 0, 0, time.UTC) // New York's midnight
	if r, err := zoned.Reserve(ctx, "k", 1); err != nil || !r.Granted {
		t.Fatalf("the first call of New York's Dec 4 = %+v, %v; want granted", r, err)
	}
}

// A version that counted UTC days saw a DAILY 429 and paused the key until
// UTC midnight, 19 hours past New York's: the pause ends at the day's end.
func TestOlderReplicasDailyPauseEndsAtTheAccountsMidnight(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db := dbtest.Migrated(t, store.SQLite)
	clock := &fakeClock{t: time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)} // 20:00 in New York, Dec 3
	nw := newSQL(t, db, Config{Limit: 10, Window: time.Second, DailyLimit: 15, TimeZone: ny, Now: clock.Now, CallLead: -1, RetrySpread: -1})
	if r, err := nw.Reserve(ctx, "k", 1); err != nil || !r.Granted {
		t.Fatal(r, err)
	}
	// What the older version writes on a DAILY 429: the day's count full,
	// paused until the next UTC midnight.
	utcMidnight := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	if _, err := db.DB.Exec("UPDATE hubsync_budget SET DayCount = 15, PausedUntilMicros = ? WHERE BudgetKey = 'k'", utcMidnight.UnixMicro()); err != nil {
		t.Fatal(err)
	}
	clock.t = time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC) // an hour after New York's midnight
	if r, err := nw.Reserve(ctx, "k", 1); err != nil || !r.Granted {
		t.Fatalf("an hour after the account's midnight = %+v, %v; want granted, not paused until %s", r, err, utcMidnight)
	}
}
