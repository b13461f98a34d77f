package hubspot

import (
	"testing"
	"time"
)

func TestNextMidnight(t *testing.T) {
	load := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	for _, c := range []struct {
		zone     string
		at, want time.Time
	}{
		{"UTC", time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC), time.Date(2025, 3, 5, 0, 0, 0, 0, time.UTC)},
		{"UTC", time.Date(2025, 3, 4, 0, 0, 0, 0, time.UTC), time.Date(2025, 3, 5, 0, 0, 0, 0, time.UTC)},
		{"Asia/Tokyo", time.Date(2025, 3, 4, 16, 0, 0, 0, time.UTC), time.Date(2025, 3, 5, 15, 0, 0, 0, time.UTC)},
		{"America/Los_Angeles", time.Date(2025, 3, 9, 7, 0, 0, 0, time.UTC), time.Date(2025, 3, 9, 8, 0, 0, 0, time.UTC)},   // 23:00 PST before the 02:00 jump
		{"America/Los_Angeles", time.Date(2025, 3, 9, 12, 0, 0, 0, time.UTC), time.Date(2025, 3, 10, 7, 0, 0, 0, time.UTC)}, // a 23-hour day
		{"Asia/Kolkata", time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC), time.Date(2025, 3, 4, 18, 30, 0, 0, time.UTC)},
		// Clocks spring forward at midnight: Sunday begins at 01:00 -03.
		{"America/Santiago", time.Date(2025, 9, 7, 2, 0, 0, 0, time.UTC), time.Date(2025, 9, 7, 4, 0, 0, 0, time.UTC)},
		{"America/Santiago", time.Date(2025, 9, 7, 3, 30, 0, 0, time.UTC), time.Date(2025, 9, 7, 4, 0, 0, 0, time.UTC)}, // 23:30 Saturday
		{"Atlantic/Azores", time.Date(2025, 3, 29, 23, 30, 0, 0, time.UTC), time.Date(2025, 3, 30, 1, 0, 0, 0, time.UTC)},
		// Clocks fall back at midnight, to 23:00 of Saturday: Sunday begins
		// at the midnight that follows, 25 hours after Saturday's.
		{"America/Santiago", time.Date(2025, 4, 5, 23, 0, 0, 0, time.UTC), time.Date(2025, 4, 6, 4, 0, 0, 0, time.UTC)},
	} {
		zone := load(c.zone)
		got := NextMidnight(c.at, zone)
		if !got.Equal(c.want) {
			t.Errorf("NextMidnight(%s in %s) = %s (%s there); want %s", c.at, c.zone, got.UTC(), got.In(zone), c.want)
		}
		if y, m, d := got.In(zone).Date(); got.In(zone).Add(-time.Microsecond).Day() == d || !got.After(c.at) {
			t.Errorf("NextMidnight(%s in %s) = %s: not the first instant of %d-%02d-%02d after it", c.at, c.zone, got.In(zone), y, m, d)
		}
	}
}

// A DAILY 429 without Retry-After waits until the account's next day, also
// where that day begins at a transition (not a negative wait).
func TestDailyRetryAfterWhereMidnightIsSkipped(t *testing.T) {
	zone, err := time.LoadLocation("America/Santiago")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2025, 9, 6, 23, 30, 0, 0, zone)
	e := parseError("GET", "/crm/v3/objects/contacts", 429, nil, []byte(`{"status":"error","errorType":"RATE_LIMIT","policyName":"DAILY"}`), now)
	if e.RetryAfter != 30*time.Minute || e.RetryAfterHeader {
		t.Fatalf("DAILY 429 at %s: RetryAfter %s (from the header: %v); want 30m, computed", now, e.RetryAfter, e.RetryAfterHeader)
	}
}
