package outbound_test

import (
	"context"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/outbound"
)

// A DAILY 429 without Retry-After (as HubSpot sends it) on a replica that
// could not learn the account's zone: its client guesses the wait to
// midnight UTC, 9 hours after HubSpot resets a Tokyo account's limit. The
// outbound worker does not hold the records that long on the guess (the
// budget, which keeps the account's day, holds them until its end).
func TestDailyLimitEventsWaitForTheBudgetNotTheClientsGuess(t *testing.T) {
	b := setup(t, options{})
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	b.clock.Set(time.Date(2031, 3, 4, 14, 0, 0, 0, time.UTC)) // 23:00 in Tokyo
	c := newCounting(b.client)
	first := true
	c.after = func(context.Context) error {
		if !first {
			return nil
		}
		first = false
		// What hubspot.Client{TimeZone: nil} returns for the simulator's DAILY 429.
		now := b.clock.Now().UTC()
		return &hubspot.Error{Method: "POST", Path: "/crm/v3/objects/contacts/batch/upsert", StatusCode: 429,
			PolicyName: "DAILY", Kind: hubspot.KindRateLimited, RetryAfter: hubspot.NextMidnight(now, time.UTC).Sub(now)}
	}
	w := b.worker(t, func(cfg *outbound.Config) { cfg.HubSpot = c })
	wl := newWorkload(b, 3)
	wl.insert(t, "contacts", map[string]any{"email": "daily@example.com", "first_name": "D"})
	if s, _ := w.RunOnce(context.Background()); s.Calls != 1 || s.Completed != 0 {
		t.Fatalf("first cycle = %+v; want one call answered 429", s)
	}
	reset := time.Date(2031, 3, 5, 0, 0, 0, 0, tokyo) // HubSpot's reset: 15:00 UTC
	b.clock.Set(reset.Add(30 * time.Minute))
	if s, _ := w.RunOnce(context.Background()); s.Completed != 1 {
		t.Fatalf("30 min after the account's midnight (%s): cycle = %+v; the event still waits for midnight UTC", reset.UTC(), s)
	}
}
