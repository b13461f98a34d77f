package budget

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hubsync/hubsync/hubspot"
)

// observeTimeout bounds one Observe made from a response hook. It runs under
// a context that outlives the caller's: what HubSpot answered is worth
// recording even when the call's worker is stopping.
const observeTimeout = 15 * time.Second

// WithCall returns ctx for one HubSpot call made under grant (of key), so
// that ObserveHubSpot's hook for key observes the call's answer with it
// (Observation.Grant): the budget then counts the call from its answer, which
// frees its room sooner when it is answered at once, and keeps it counted
// when it reached HubSpot late. Give each call its own context: the grant is
// observed with the first answer only. A grant that was not granted leaves
// ctx as it is.
func WithCall(ctx context.Context, key string, grant Reservation) context.Context {
	if !grant.Granted {
		return ctx
	}
	return context.WithValue(ctx, callKey{}, &call{key: key, grant: grant})
}

type callKey struct{}

// call is the grant of one call, observed at most once.
type call struct {
	key      string
	grant    Reservation
	observed atomic.Bool
}

// grantOf returns the grant of ctx's call to key, once; the zero Reservation
// when there is none, or when it was observed already.
func grantOf(ctx context.Context, key string) Reservation {
	c, _ := ctx.Value(callKey{}).(*call)
	if c == nil || c.key != key || !c.observed.CompareAndSwap(false, true) {
		return Reservation{}
	}
	return c.grant
}

// ObserveHubSpot returns a hubspot.Config.OnResponse hook that feeds every
// response's rate-limit headers (and every 429) to b under key, so that all
// calls of a client, reads and writes of every worker alike, calibrate the
// one shared budget. Responses without rate-limit headers that are not 429s
// (searches) are skipped, unless the call was made under a grant (WithCall).
// A failing Observe is logged to log (nil: discarded) and otherwise ignored:
// the call itself succeeded or failed on its own.
func ObserveHubSpot(b Budget, key string, log *slog.Logger) func(context.Context, hubspot.Response) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, r hubspot.Response) {
		o := observationOf(r)
		o.Grant = grantOf(ctx, key)
		if o == (Observation{}) {
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), observeTimeout)
		defer cancel()
		if err := b.Observe(ctx, key, o); err != nil {
			log.Warn("budget: feed HubSpot rate limit to the budget", "key", key, "err", err)
		}
	}
}

// observationOf is what a HubSpot response says about the budget; the zero
// Observation when it says nothing (no rate-limit headers, not a 429).
func observationOf(r hubspot.Response) Observation {
	var o Observation
	if r.Err != nil && r.Err.Kind == hubspot.KindRateLimited {
		o.RateLimited, o.Policy, o.RetryAfter = true, r.Err.PolicyName, r.Err.RetryAfter
		if o.Policy == PolicyDaily && !r.Err.RetryAfterHeader {
			// The client's guess of the account's midnight: the budget
			// knows when its day ends (the zone every replica shares).
			o.RetryAfter = 0
		}
	}
	if !r.RateLimit.Present && !o.RateLimited {
		return Observation{}
	}
	rl := r.RateLimit
	o.Max, o.Remaining, o.DailyMax, o.DailyRemaining = rl.Max, rl.Remaining, rl.DailyMax, rl.DailyRemaining
	o.Interval = time.Duration(rl.IntervalMillis) * time.Millisecond
	return o
}
