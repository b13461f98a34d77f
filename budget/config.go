package budget

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Defaults for Config. HubSpot's per-app burst limits (per 10 s) are 100 for a
// private app on Free/Starter, 110 for a public OAuth app per installing account,
// 190 for a private app on Professional/Enterprise and 250 with the API limit
// increase add-on; daily limits are 250,000 (Free/Starter), 625,000
// (Professional), 1,000,000 (Enterprise), none documented for OAuth apps.
const (
	LimitDefault       = 100
	WindowDefault      = 10 * time.Second
	DailyLimitDefault  = 250_000
	SearchLimitDefault = 5
	// CallLeadDefault is Config.CallLead's default: 2% of HubSpot's window, so
	// the budget grants at least 98% of its limit while leaving a call that
	// much time to start.
	CallLeadDefault = 200 * time.Millisecond
	// RetrySpreadDefault is Config.RetrySpread's default.
	RetrySpreadDefault = 500 * time.Millisecond
	// PaceDefault is Config.Pace's default: a full window's calls take at
	// least half of it.
	PaceDefault = 2
)

// Search keys. HubSpot limits its CRM search endpoints to 5 requests per second,
// separately from the 10-second burst limit, and search responses carry no
// rate-limit headers.
const (
	// SearchKeySuffix marks a key whose budget is the search budget: SearchLimit
	// calls per SearchWindow and no daily limit of its own.
	SearchKeySuffix = ":search"
	// SearchWindow is the window of search keys.
	SearchWindow = time.Second
)

// SearchKey returns the key of key's search budget (key + SearchKeySuffix).
func SearchKey(key string) string { return key + SearchKeySuffix }

// Errors returned by Reserve.
var (
	// ErrTooManyTokens means the request asks for more tokens than its key's
	// limit per window: it could never be granted, so waiting would not help.
	// Split the work into smaller reservations.
	ErrTooManyTokens = errors.New("budget: more tokens than the limit per window")
	// ErrInvalidTokens means tokens was below 1.
	ErrInvalidTokens = errors.New("budget: tokens must be at least 1")
	// ErrInvalidKey means the key was empty or longer than MaxKeyLength.
	ErrInvalidKey = errors.New("budget: invalid key")
)

// MaxKeyLength is the longest key the SQL budget can store.
const MaxKeyLength = 255

// Config configures a Budget. The zero value means the defaults.
//
// Every replica sharing one database must use the same Limit, Window and
// DailyLimit; a replica that reads a key written with another Window converts
// its state conservatively (all counted calls taken as made at the latest moment).
type Config struct {
	// Limit is the number of calls per Window for a normal key. Default
	// LimitDefault (100: private app, Free/Starter); HubSpot tiers allow 110
	// (public OAuth app), 190 (Professional/Enterprise) or 250 (limit add-on).
	// Setting it a little below the tier's number leaves room for other tools
	// that share the app.
	Limit int
	// Window is the length of the rolling window of Limit. Default WindowDefault
	// (10 s, HubSpot's TEN_SECONDLY_ROLLING). At least 10 ms.
	Window time.Duration
	// DailyLimit is the number of calls per day for a normal key. 0 means
	// DailyLimitDefault (250,000); a negative value means no daily limit (OAuth
	// apps). The day is TimeZone's, as HubSpot's; Observe with the Daily
	// headers corrects the count for calls made by other tools.
	DailyLimit int
	// TimeZone is the HubSpot account's time zone: HubSpot resets the daily
	// limit at its midnight, and so does the budget (a DAILY 429 pauses the
	// key until then). The SQL budget records it with each key's day, so nil
	// (unknown: HubSpot did not say) takes the zone another replica
	// recorded, else UTC. A day begun in a zone ends at its midnight,
	// whatever zone the replica that sees it was told (tell them all the
	// same one); a day begun in UTC days (by a replica without a zone, or a
	// version before zones were kept) ends at the account's first midnight
	// after it began, for a replica that knows the zone.
	TimeZone *time.Location
	// SearchLimit is the number of calls per SearchWindow (1 s) for keys that end
	// in SearchKeySuffix. Default SearchLimitDefault (5).
	SearchLimit int
	// CallLead is how long after a grant its calls may start (Reservation.UseBy):
	// each grant is counted for Window + CallLead, so a call made up to CallLead
	// after its grant is still inside the window the budget counts, and never
	// spills uncounted into HubSpot's next window. Reserve right before each
	// call rather than a cycle's calls at once. A call observed with its
	// grant once answered (Observation.Grant, WithCall) is counted from its
	// answer instead, so the lead costs only calls that go unanswered (the
	// caller crashed, or the connection failed). Default CallLeadDefault; a
	// negative value means none (calls must start within the grant's bucket,
	// 1% of Window). Search keys use the same fraction of their 1 s window.
	CallLead time.Duration
	// RetrySpread is the most a refusal's RetryAfter is lengthened at random,
	// so that cycles refused together wake apart. Default RetrySpreadDefault; a
	// negative value means none. Search keys use the same fraction of their
	// window.
	RetrySpread time.Duration
	// Pace caps how fast calls booked ahead (Scheduler.Schedule) are
	// granted: none is booked into a slice of 1% of Window that already holds
	// Pace times its even share of Limit (Limit/100, rounded up), so a full
	// window's booked calls are spread over at least 1/Pace of it.
	// Calls granted in one burst leave the window in the same burst one Window
	// later, faster than workers can take the room they free, and room not
	// taken at once is lost; paced, it frees at a rate the workers keep up
	// with. A reservation of more tokens than that share gets a slice of its
	// own. Reserve, and Schedule with nothing to wait for, grant any room
	// the window has: their callers cannot wait. Default PaceDefault; a
	// negative value means no cap.
	Pace int
	// Now is the clock. Default time.Now. Replicas sharing a database should run
	// NTP-synced clocks: a replica whose clock runs behind is treated as if it
	// were at the latest time any replica has recorded (safe, but slower).
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	c.Limit = cmp.Or(c.Limit, LimitDefault)
	c.Window = cmp.Or(c.Window, WindowDefault)
	c.DailyLimit = cmp.Or(c.DailyLimit, DailyLimitDefault)
	c.SearchLimit = cmp.Or(c.SearchLimit, SearchLimitDefault)
	c.CallLead = cmp.Or(c.CallLead, CallLeadDefault)
	c.RetrySpread = cmp.Or(c.RetrySpread, RetrySpreadDefault)
	c.Pace = cmp.Or(c.Pace, PaceDefault)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Limit < 1:
		return fmt.Errorf("budget: Limit is %d; set it to the calls allowed per Window (e.g. 100, or 0 for the default)", c.Limit)
	case c.Window < 10*time.Millisecond:
		return fmt.Errorf("budget: Window is %s; set it to at least 10ms (HubSpot's is 10s, or 0 for the default)", c.Window)
	case c.DailyLimit > 0 && c.DailyLimit < c.Limit:
		return fmt.Errorf("budget: DailyLimit %d is below Limit %d; raise DailyLimit, or set it negative for no daily limit", c.DailyLimit, c.Limit)
	case c.CallLead > c.Window:
		return fmt.Errorf("budget: CallLead %s exceeds Window %s; lower CallLead (a grant is counted for Window + CallLead)", c.CallLead, c.Window)
	case c.RetrySpread > c.Window:
		return fmt.Errorf("budget: RetrySpread %s exceeds Window %s; lower RetrySpread", c.RetrySpread, c.Window)
	case c.SearchLimit < 1:
		return fmt.Errorf("budget: SearchLimit is %d; set it to the search calls allowed per second (HubSpot: 5, or 0 for the default)", c.SearchLimit)
	}
	return nil
}

// limitsFor returns the limits of key, or an error when tokens can never be
// granted for it.
func (c Config) limitsFor(key string, tokens int) (limits, error) {
	if key == "" || len(key) > MaxKeyLength {
		return limits{}, fmt.Errorf("%w: %q must have 1 to %d bytes", ErrInvalidKey, key, MaxKeyLength)
	}
	var l limits
	if strings.HasSuffix(key, SearchKeySuffix) {
		scale := func(d time.Duration) time.Duration {
			return time.Duration(int64(d) * int64(SearchWindow) / int64(c.Window))
		}
		l = newPacedLimits(c.SearchLimit, SearchWindow, -1, scale(c.CallLead), scale(c.RetrySpread), c.Pace)
	} else {
		l = newPacedLimits(c.Limit, c.Window, c.DailyLimit, c.CallLead, c.RetrySpread, c.Pace)
	}
	l.zone = c.TimeZone
	if tokens < 1 {
		return l, fmt.Errorf("%w (got %d for key %q)", ErrInvalidTokens, tokens, key)
	}
	if int64(tokens) > l.limit {
		return l, fmt.Errorf("%w: %d tokens for key %q, whose limit is %d per %s; reserve in smaller batches",
			ErrTooManyTokens, tokens, key, l.limit, time.Duration(l.window)*time.Microsecond)
	}
	return l, nil
}
