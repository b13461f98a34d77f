package budget

import (
	"context"
	"time"
)

// Reservation is the answer to Reserve.
type Reservation struct {
	// Granted is true when the tokens were taken.
	Granted bool
	// RetryAfter is, when not granted, how long until enough budget frees up,
	// plus a random part of up to Config.RetrySpread, so that the replicas
	// refused together do not all come back at the same instant.
	RetryAfter time.Duration
	// UseBy is, when granted, the latest moment (by the budget's clock) at
	// which the granted calls may start: the budget counts them until UseBy +
	// Window, so a call made by then is counted for the whole window in which
	// HubSpot counts it. A call that would start later must be reserved again
	// (the late grant stays counted; it can only make the budget stricter).
	UseBy time.Time
}

// Late reports whether a call starting at now is too late for r's grant. A
// grant without UseBy (a Budget that sets none) is never late.
func (r Reservation) Late(now time.Time) bool { return !r.UseBy.IsZero() && now.After(r.UseBy) }

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
