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
	// Window (or, for a call observed with its grant once answered, Window
	// after the answer: Observation.Grant), so a call made by then is counted
	// for the whole window in which HubSpot counts it. A call that would
	// start later must be reserved again (the late grant stays counted; it can
	// only make the budget stricter).
	UseBy time.Time
	// Wait is, for a grant booked ahead (Scheduler.Schedule), how long after
	// the grant its calls may start; zero for a grant to use at once. A call
	// must not start before it.
	Wait time.Duration
	// Full reports, for a grant booked ahead (Wait > 0), that the window had
	// no room for its calls at once: the limit, not only pacing
	// (Config.Pace), made them wait.
	Full bool

	// bucket and width say where the grant is counted (Observation.Grant).
	bucket, width int64
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
	// Grant is the grant of the key under which the answered call was made,
	// when the caller knows it (WithCall; the zero Reservation otherwise).
	// The budget then counts that call, one of the grant's tokens, from the
	// answer rather than from the grant: it left for HubSpot before it was
	// answered, so HubSpot counts it no later than that. A call answered
	// soon after its grant frees its room up to CallLead sooner; one that
	// reached HubSpot late, after its UseBy, stays counted for as long as
	// HubSpot counts it. Each call must be observed with its grant at most
	// once.
	Grant Reservation
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

// Scheduler is a Budget that can also book calls ahead.
//
// A caller refused by Reserve learns how long to wait, and cycles refused
// together come back at about the same time to contend for the room freed
// meanwhile (RetrySpread only spreads them). A caller that books ahead
// instead gets the next instant the window has room for it, and that room is
// its own: callers queue for the window's room in the order they asked, and
// each can prepare its call before its instant, so room freed in the window
// is used at once rather than after a caller notices it.
type Scheduler interface {
	Budget
	// Schedule takes tokens calls from key's budget for the earliest moment,
	// from now to within ahead (at most one Window), at which they fit in
	// every window they will be counted in, paced (Config.Pace). The grant's
	// calls must start between its Wait (zero: at once) and its UseBy. When
	// no such moment is that close, it refuses as Reserve does. Schedule with
	// within 0 is Reserve.
	//
	// A grant booked ahead is not withdrawn by a later pause (a 429): its
	// caller asks Paused when its instant comes, and does not call while the
	// key is paused.
	Schedule(ctx context.Context, key string, tokens int, within time.Duration) (Reservation, error)
	// Paused returns how long key stays paused from now after a 429 that
	// HubSpot answered since (Observe); zero when it is not paused. It reads
	// without locking or writing.
	Paused(ctx context.Context, key string) (time.Duration, error)
}
