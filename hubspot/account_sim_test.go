package hubspot_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
)

// The account's time zone is read from HubSpot, and the daily limit resets
// at its midnight (08:00 UTC in Los Angeles in winter), not at UTC's.
func TestAccountTimeZoneAndDailyReset(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2025, 3, 4, 7, 59, 58, 0, time.UTC) // 23:59:58 in Los Angeles
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c, sim := simClient(t, hubspotsim.Config{TimeZone: "America/Los_Angeles", DailyLimit: 3, Now: clock})
	ctx := context.Background()
	loc, err := c.AccountLocation(ctx)
	if err != nil || loc.String() != "America/Los_Angeles" {
		t.Fatalf("AccountLocation = %v, %v; want America/Los_Angeles", loc, err)
	}
	u, err := c.DailyUsage(ctx)
	if err != nil || len(u) != 1 || u[0].CurrentUsage != 2 || u[0].UsageLimit != 3 || !u[0].ResetsAt.Equal(time.Date(2025, 3, 4, 8, 0, 0, 0, time.UTC)) {
		t.Fatalf("DailyUsage = %+v, %v; want 2 of 3 used, resetting at 08:00 UTC", u, err)
	}
	if _, err := c.AccountDetails(ctx); err != nil {
		t.Fatal(err)
	}
	var he *hubspot.Error
	if _, err := c.AccountDetails(ctx); !errors.As(err, &he) || he.Kind != hubspot.KindRateLimited || he.PolicyName != "DAILY" {
		t.Fatalf("fourth call of a day of 3 = %v; want a DAILY 429", err)
	}
	// A client told the account's zone waits for its midnight after a DAILY
	// 429 without Retry-After (by the client's own clock).
	zoned, err := hubspot.NewClient(hubspot.Config{BaseURL: sim.URL(), AccessToken: hubspotsim.AccessTokenDefault, TimeZone: loc})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().In(loc)
	_, err = zoned.AccountDetails(ctx)
	after := time.Now().In(loc)
	midnight := func(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc) }
	if !errors.As(err, &he) || he.RetryAfter > midnight(before).Sub(before) || he.RetryAfter < midnight(after).Sub(after) {
		t.Fatalf("DAILY 429 = %v; want RetryAfter until midnight in Los Angeles (%s)", err, midnight(before).Sub(before))
	}
	mu.Lock()
	now = now.Add(2 * time.Second) // midnight in Los Angeles, 08:00 UTC
	mu.Unlock()
	if _, err := c.AccountDetails(ctx); err != nil {
		t.Fatalf("first call after the account's midnight = %v; want it admitted", err)
	}
}

// A time zone HubSpot does not know is refused by the simulator's config.
func TestSimRefusesUnknownTimeZone(t *testing.T) {
	t.Parallel()
	if _, err := hubspotsim.New(hubspotsim.Config{TimeZone: "Mars/Olympus"}); err == nil {
		t.Fatal("New with TimeZone Mars/Olympus succeeded; want an error naming TimeZone")
	}
}
