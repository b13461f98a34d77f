package hubspot

import (
	"net/http"
	"strconv"
	"strings"
)

// Rate-limit response headers HubSpot sends on normal (non-search) responses.
const (
	HeaderRateLimitInterval       = "X-HubSpot-RateLimit-Interval-Milliseconds"
	HeaderRateLimitMax            = "X-HubSpot-RateLimit-Max"
	HeaderRateLimitRemaining      = "X-HubSpot-RateLimit-Remaining"
	HeaderRateLimitDaily          = "X-HubSpot-RateLimit-Daily"
	HeaderRateLimitDailyRemaining = "X-HubSpot-RateLimit-Daily-Remaining"
)

// RateLimit is what one response said about the app's rate-limit budget.
// Search responses and OAuth apps omit some or all headers: check Present,
// and treat a zero DailyMax as "not reported", not as "no budget".
type RateLimit struct {
	// IntervalMillis is the rolling window length, e.g. 10000.
	IntervalMillis int
	// Max is the number of requests allowed per window.
	Max int
	// Remaining is the number of requests left in the current window.
	Remaining int
	// DailyMax is the account's daily allowance (private apps only).
	DailyMax int
	// DailyRemaining is what is left of DailyMax today.
	DailyRemaining int
	// Present is true when at least one rate-limit header was parsed.
	Present bool
}

// ParseRateLimit reads the X-HubSpot-RateLimit-* headers of a response.
// Missing or malformed headers leave their field zero.
func ParseRateLimit(h http.Header) RateLimit {
	var rl RateLimit
	get := func(name string, dst *int) {
		v := strings.TrimSpace(h.Get(name))
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return
		}
		*dst = n
		rl.Present = true
	}
	get(HeaderRateLimitInterval, &rl.IntervalMillis)
	get(HeaderRateLimitMax, &rl.Max)
	get(HeaderRateLimitRemaining, &rl.Remaining)
	get(HeaderRateLimitDaily, &rl.DailyMax)
	get(HeaderRateLimitDailyRemaining, &rl.DailyRemaining)
	return rl
}
