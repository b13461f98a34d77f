package budget

import (
	"context"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

func TestSQLUsage(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		db := dbtest.Migrated(t, d)
		clock := newClock()
		ctx := context.Background()
		b := newSQL(t, db, Config{Limit: 100, Now: clock.Now})
		if u, err := b.Usage(ctx); err != nil || len(u) != 0 {
			t.Fatalf("Usage of an unused budget = %+v, %v; want none", u, err)
		}
		for _, k := range []string{"b", "a"} {
			if r, err := b.Reserve(ctx, k, 3); err != nil || !r.Granted {
				t.Fatalf("Reserve(%s) = %+v, %v", k, r, err)
			}
		}
		if err := b.Observe(ctx, "b", Observation{RateLimited: true, Policy: "TEN_SECONDLY_ROLLING", RetryAfter: 10 * time.Second}); err != nil {
			t.Fatal(err)
		}
		u, err := b.Usage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(u) != 2 || u[0].Key != "a" || u[1].Key != "b" {
			t.Fatalf("Usage = %+v, want keys a and b in order", u)
		}
		if u[0].CallsToday != 3 || u[0].PausedUntil != nil {
			t.Errorf("Usage of a = %+v, want 3 calls today and no pause", u[0])
		}
		if u[1].PausedUntil == nil || !u[1].PausedUntil.After(clock.Now()) {
			t.Errorf("Usage of b = %+v, want a pause after the 429", u[1])
		}
		clock.Advance(48 * time.Hour)
		u, err = b.Usage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range u {
			if x.CallsToday != 0 || x.PausedUntil != nil {
				t.Errorf("Usage two days later = %+v, want no calls today and no pause", x)
			}
		}
	})
}
