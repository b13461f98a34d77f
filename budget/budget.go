package budget

import (
	"context"
	"time"
)

// Reservation is the answer to Reserve.
type Reservation struct {
	// Granted is true when the tokens were taken.
	Granted bool
	// RetryAfter is, when not granted, how long until enough budget frees up.
	RetryAfter time.Duration
}

// Observation is what a HubSpot answer said about the limits of a key.
type Observation struct {
	// Max and Remaining are X-HubSpot-RateLimit-Max and -Remaining (0 when absent).
	Max, Remaining int
	// Interval is X-HubSpot-RateLimit-Interval-Milliseconds as a duration.
	Interval time.Duration
	// DailyMax and DailyRemaining are the -Daily headers (0 when absent).
	DailyMax, DailyRemaining int
	// RateLimited is true for a 429; Policy is its policyName
	// (TEN_SECONDLY_ROLLING, DAILY, SECONDLY) and RetryAfter the wait it implies.
	RateLimited bool
	Policy      string
	RetryAfter  time.Duration
}

// Budget is a shared call budget. Implementations are safe for concurrent use by
// many goroutines and, for the shared ones, by many processes.
type Budget interface {
	// Reserve takes tokens calls from key's budget, or refuses with RetryAfter.
	Reserve(ctx context.Context, key string, tokens int) (Reservation, error)
	// Observe feeds back what HubSpot answered for key, so the budget can
	// calibrate; after a 429 it pauses key for every replica.
	Observe(ctx context.Context, key string, o Observation) error
}
