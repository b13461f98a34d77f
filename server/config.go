package server

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	hubsync "github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/store"
)

// Defaults of Config.
const (
	DatabaseURLDefault = "sqlite:hubsync.db"
	AddrDefault        = "127.0.0.1:8080"
	// RateLimitDefault is HubSpot's burst limit for a private app on Free/Starter,
	// in calls per 10 seconds.
	RateLimitDefault = budget.LimitDefault
	// DrainTimeoutDefault bounds a graceful stop; then in-flight work is abandoned
	// and its leases expire by themselves.
	DrainTimeoutDefault = 30 * time.Second
	// CleanupIntervalDefault is how often the cleanup runs.
	CleanupIntervalDefault = time.Hour
	// BudgetKeyDefault is the budget key of the configured private app.
	BudgetKeyDefault = "hubspot:private-app:primary"
	// OutboundConcurrencyMax bounds Config.OutboundConcurrency: each cycle
	// holds up to a batch of claimed events and a database connection at a
	// time.
	OutboundConcurrencyMax = 16

	// ReadHeaderTimeoutDefault bounds the reading of a request's headers, so a
	// client sending them slowly (slowloris) is cut off.
	ReadHeaderTimeoutDefault = 10 * time.Second
	// ReadTimeoutDefault bounds the reading of a whole request, body included.
	ReadTimeoutDefault = 30 * time.Second
	// WriteTimeoutDefault bounds a request from the end of its headers to the
	// end of the answer.
	WriteTimeoutDefault = 60 * time.Second
	// IdleTimeoutDefault is how long an idle keep-alive connection is kept.
	IdleTimeoutDefault = 60 * time.Second
	// MaxHeaderBytesDefault bounds a request's headers.
	MaxHeaderBytesDefault = 64 << 10
)

// Config configures a Server. The zero value of every field means its default;
// the settings HubSpot needs have none and are required by the parts that use
// them. Errors name the fields; `hubsync serve` sets each field from a flag and
// an environment variable and names those instead.
type Config struct {
	// DatabaseURL is the database: sqlite:PATH, postgres://… or mysql://….
	// Default DatabaseURLDefault. SQLite is migrated on start; PostgreSQL and
	// MySQL must have been migrated with `hubsync migrate`.
	DatabaseURL string
	// Addr is the listen address; default AddrDefault. Use port 0
	// for any free port (see Server.Addr).
	Addr string
	// MetricsAddr, when set, is a second listen address that serves GET
	// /metrics (and GET /healthz) only, and Addr then does not serve
	// /metrics: the figures stay on a port only the scraper reaches, while
	// Addr is exposed to HubSpot and the API's clients. Empty: /metrics is
	// served on Addr to anyone who reaches it. Port 0 picks a free port
	// (see Server.MetricsAddr).
	MetricsAddr string
	// PublicURL is the scheme and host HubSpot calls
	// (webhook signatures cover it). Empty: rebuilt from each request, which
	// only fits a receiver that HubSpot reaches without a proxy.
	PublicURL string
	// HubSpotAPIBase is the HubSpot API base URL; default hubspot.BaseURLDefault.
	HubSpotAPIBase string
	// HubSpotAccessToken is the private app's token;
	// required by the SyncWorker and the outbound worker.
	HubSpotAccessToken string
	// HubSpotClientSecret is the app's client secret, which signs webhooks;
	// required by the webhook receiver.
	HubSpotClientSecret string
	// HubSpotAppID is the app's numeric id; with it, webhook
	// events caused by hubsync's own writes are recognised as echoes.
	HubSpotAppID string
	// HubSpotPortalID is the HubSpot account (portal) id; webhook events of
	// another account are refused (an app installed in several accounts
	// sends every account's events to one URL). Empty: serve asks HubSpot
	// at start (the access token's account); when it cannot, no event is
	// refused for its portal.
	HubSpotPortalID string
	// AdminToken is the bearer token of the admin API; empty turns it off (404).
	// It must be at least TokenMinLength characters.
	AdminToken string
	// APITokens are the bearer tokens of every /api/… route (the records API
	// and any later one): a request carrying any of them is let in, so a token
	// can be rotated by adding the new one, moving the clients, then removing
	// the old. Empty turns the /api routes off (404). Each must be at least
	// TokenMinLength characters.
	APITokens []string
	// WebhookSignatures are the signature versions the webhook receiver
	// accepts; nil means v3 only, see
	// inbound.ReceiverConfig.Signatures.
	WebhookSignatures []hubspot.SignatureVersion
	// TrustedProxies are the peers whose X-Forwarded-Proto/-Host the webhook
	// receiver believes when PublicURL is empty.
	TrustedProxies []netip.Prefix

	// RateLimit is the HubSpot calls per 10 s shared by
	// every replica; default RateLimitDefault.
	RateLimit int
	// DailyLimit is the HubSpot calls per day; 0 means budget.DailyLimitDefault,
	// negative none.
	DailyLimit int
	// HubSpotTimeZone is the HubSpot account's time zone (an IANA name such
	// as America/New_York): HubSpot resets the daily limit at its midnight,
	// and so does the shared budget. Empty means ask HubSpot at start (GET
	// /account-info/v3/details); when it cannot say, the budget takes the
	// zone another replica recorded, else UTC (budget.Config.TimeZone).
	HubSpotTimeZone string
	// BudgetCallLead is how long after the budget grants a call it may start
	// (budget.Config.CallLead): each grant is counted for 10 s plus this, so a
	// call started late still counts in the window HubSpot counts it in. 0 means
	// budget.CallLeadDefault (200 ms); at most 10 s.
	BudgetCallLead time.Duration
	// BudgetRetrySpread is the most a budget refusal's wait is lengthened at
	// random, so replicas refused together wake apart (budget.Config.RetrySpread).
	// 0 means budget.RetrySpreadDefault (500 ms); at most 10 s.
	BudgetRetrySpread time.Duration
	// BudgetPace caps how fast calls booked ahead are granted: at most this
	// many times the even share of RateLimit per 1% of the window
	// (budget.Config.Pace). 0 means budget.PaceDefault (2), negative none.
	BudgetPace int
	// OutboundBudgetAhead is how far ahead an outbound cycle may book its call
	// when the window is full, keeping its records, instead of releasing them
	// (outbound.Config.BudgetAhead); 0 means outbound.BudgetAheadDefault
	// (2 s), negative never, at most 10 s.
	OutboundBudgetAhead time.Duration
	// OutboundFillWait is how long an outbound cycle may go on claiming to fill
	// its batch calls (outbound.Config.FillWait); 0 means
	// outbound.FillWaitDefault (250 ms), negative none, at most 1 s.
	OutboundFillWait time.Duration
	// OutboundConcurrency is how many outbound cycles (claimed batches) each
	// replica keeps in flight (outbound.Config.Concurrency); 0 means
	// outbound.ConcurrencyDefault (3), at most OutboundConcurrencyMax. More
	// cycles keep the budget busy while calls wait on HubSpot; for
	// outbound.NarrowFor after the budget refused one of them, a replica runs
	// one at a time (BENCHMARKS.md, eighth session).
	OutboundConcurrency int
	// OutboundHold is the cadence at which outbound workers claim while the
	// budget is short, so that their calls fill (outbound.Config.Hold); 0
	// means outbound.HoldDefault (2 s), negative never, at most 10 s.
	OutboundHold time.Duration
	// SyncApplyConcurrency is how many records the SyncWorker applies at once
	// (inbound.WorkerConfig.ApplyConcurrency); a record's events still apply
	// in order. 0 means inbound.ApplyConcurrencyDefault (4) on PostgreSQL,
	// MySQL and MariaDB, and 1 on SQLite: it admits one writer, so parallel
	// applies would only take turns at its write lock, polling (busy_timeout).
	// On MySQL and MariaDB concurrent creations can deadlock on the links
	// table's unique index (InnoDB gap locks); the records service runs the
	// victim's transaction again at once, so the event is not retried. At
	// most inbound.ApplyConcurrencyMax.
	SyncApplyConcurrency int
	// BudgetKey names the budget shared by every replica; default BudgetKeyDefault.
	BudgetKey string
	// HubSpotTimeout bounds one HubSpot request; default hubspot.TimeoutDefault.
	// The outbound worker's writes are bounded further, by
	// outbound.HTTPTimeoutDefault (10 s) when this is longer: every write must
	// be answered under its events' lease, so its timeout decides how long a
	// crashed replica's events stay leased.
	HubSpotTimeout time.Duration

	// The parts of the service, all on by default; switch some off for split
	// deployments.
	DisableWebhooks       bool
	DisableSyncWorker     bool
	DisableOutboundWorker bool
	DisableRelay          bool
	DisableCleanup        bool
	DisableAPI            bool

	// Mapping maps local object types and fields to HubSpot's; default
	// mapping.Default(). It drives every part: the records API accepts its
	// object types only, the webhook receiver and the SyncWorker map HubSpot's
	// objects through it, and the outbound worker maps local records. A
	// service user loads it from a file with mapping.Load.
	Mapping *mapping.Set

	// Cleanup sets the retentions of processed events and of the other rows
	// the cleanup deletes (ops.CleanupConfig).
	Cleanup ops.CleanupConfig
	// CleanupInterval is how often the cleanup runs; default CleanupIntervalDefault.
	CleanupInterval time.Duration
	// DrainTimeout bounds a graceful stop; default DrainTimeoutDefault.
	DrainTimeout time.Duration
	// ReconcileAfter is the age past which the reconciliation sweep reports a due
	// event nobody claimed; default ops.ReconcileAfterDefault.
	ReconcileAfter time.Duration
	// MaxEventSkew is how far ahead of this process's
	// clock a webhook event's occurredAt may lie before the receiver (and the
	// SyncWorker) refuse it; default inbound.MaxEventSkewDefault.
	MaxEventSkew time.Duration
	// HTTP bounds the listener's connections (timeouts, header size).
	HTTP HTTPConfig
	// StatsTTL is how long the queue statistics behind the /metrics gauges are
	// reused before they are read again; default StatsTTLDefault.
	StatsTTL time.Duration
	// AuthFailureLogInterval bounds how often failed token attempts are
	// logged; default AuthFailureLogIntervalDefault.
	AuthFailureLogInterval time.Duration
	// Drift configures drift detection and repair: POST /admin/drift and the
	// scheduled scan (off by default).
	Drift DriftConfig
	// Store configures the store (retry policy, clock).
	Store store.Config

	// Dispatch is how outbound events reach the outbound worker:
	// DispatchPoll (default; workers poll the queue) or DispatchQStash (a
	// publisher hands them to QStash, which delivers them to the signed
	// worker endpoint, POST /qstash/hubspot). See dispatch.go.
	Dispatch string
	// QStashURL and QStashToken reach QStash's publish API; required in
	// qstash mode.
	QStashURL   string
	QStashToken string
	// QStashCurrentSigningKey (required in qstash mode) and
	// QStashNextSigningKey verify the deliveries' Upstash-Signature.
	QStashCurrentSigningKey string
	QStashNextSigningKey    string
	// WorkerURL is the public URL QStash delivers to (…/qstash/hubspot),
	// exactly as the signatures' sub claim names it; required in qstash mode.
	WorkerURL string
	// FlowControlKey, FlowControlRate, FlowControlPeriod and
	// FlowControlParallelism are QStash's flow control of the deliveries;
	// defaults: the budget key with ':' as '-', FlowControlRateSharePercent
	// of RateLimit per FlowControlPeriodDefault (80 per 10 s for the default
	// 100), FlowControlParallelismDefault at once. A rate above RateLimit
	// over the period is logged at start: the budget then refuses deliveries.
	FlowControlKey         string
	FlowControlRate        int
	FlowControlPeriod      time.Duration
	FlowControlParallelism int
	// QStashRetries is Upstash-Retries of each message; 0 means
	// qstash.RetriesDefault, negative none (each message is delivered once:
	// the reconciliation sweep then repairs what a failed delivery left).
	// QStashRetryDelay is Upstash-Retry-Delay, e.g.
	// "pow(2, retried) * 1000" (milliseconds); empty keeps QStash's backoff.
	QStashRetries    int
	QStashRetryDelay string
	// CronSecret is the bearer token of GET /api/cron/reconcile; empty turns
	// the route off (404).
	CronSecret string
	// Logger receives the service's logs; default slog.Default().
	Logger *slog.Logger
	// TracerProvider receives the OpenTelemetry spans of webhook deliveries,
	// records writes, the workers' cycles and events, and HubSpot calls; nil
	// traces nothing. The library never builds an exporter: `hubsync serve`
	// builds an OTLP one when OTEL_EXPORTER_OTLP_ENDPOINT is set.
	TracerProvider trace.TracerProvider
}

// HTTPConfig bounds the connections of the Server's listener. The zero value
// of each field means its default.
type HTTPConfig struct {
	// ReadHeaderTimeout bounds the reading of a request's headers; default
	// ReadHeaderTimeoutDefault.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the reading of a whole request; default ReadTimeoutDefault.
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the end of
	// its answer; default WriteTimeoutDefault.
	WriteTimeout time.Duration
	// IdleTimeout is how long an idle keep-alive connection is kept; default
	// IdleTimeoutDefault.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers; default MaxHeaderBytesDefault.
	MaxHeaderBytes int
}

// WithDefaults returns c with zero fields set to their defaults.
func (c HTTPConfig) WithDefaults() HTTPConfig {
	c.ReadHeaderTimeout = cmp.Or(c.ReadHeaderTimeout, ReadHeaderTimeoutDefault)
	c.ReadTimeout = cmp.Or(c.ReadTimeout, ReadTimeoutDefault)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, WriteTimeoutDefault)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, IdleTimeoutDefault)
	c.MaxHeaderBytes = cmp.Or(c.MaxHeaderBytes, MaxHeaderBytesDefault)
	return c
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.DatabaseURL = cmp.Or(c.DatabaseURL, DatabaseURLDefault)
	c.Addr = cmp.Or(c.Addr, AddrDefault)
	c.HubSpotAPIBase = cmp.Or(c.HubSpotAPIBase, hubspot.BaseURLDefault)
	c.RateLimit = cmp.Or(c.RateLimit, RateLimitDefault)
	c.BudgetKey = cmp.Or(c.BudgetKey, BudgetKeyDefault)
	c.HubSpotTimeout = cmp.Or(c.HubSpotTimeout, hubspot.TimeoutDefault)
	if c.Mapping == nil {
		c.Mapping = mapping.Default()
	}
	c.Cleanup = c.Cleanup.WithDefaults()
	c.CleanupInterval = cmp.Or(c.CleanupInterval, CleanupIntervalDefault)
	c.DrainTimeout = cmp.Or(c.DrainTimeout, DrainTimeoutDefault)
	c.ReconcileAfter = cmp.Or(c.ReconcileAfter, ops.ReconcileAfterDefault)
	c.HTTP = c.HTTP.WithDefaults()
	c.StatsTTL = cmp.Or(c.StatsTTL, StatsTTLDefault)
	c.AuthFailureLogInterval = cmp.Or(c.AuthFailureLogInterval, AuthFailureLogIntervalDefault)
	c = c.dispatchDefaults()
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("configuration")

// callsHubSpot reports whether a part that calls the HubSpot API is on.
func (c Config) callsHubSpot() bool { return !c.DisableSyncWorker || !c.DisableOutboundWorker }

// Validate reports every setting that cannot work, each naming the Config field
// and the fix.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if _, err := hubsync.ParseDatabaseURL(c.DatabaseURL); err != nil {
		add("DatabaseURL: %v", err)
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		add("Addr %q is not host:port (%v); use e.g. 127.0.0.1:8080 or :8080", c.Addr, err)
	}
	if c.MetricsAddr != "" {
		_, port, err := net.SplitHostPort(c.MetricsAddr)
		switch {
		case err != nil:
			add("MetricsAddr %q is not host:port (%v); use e.g. 127.0.0.1:9090, or leave it empty to serve /metrics on Addr", c.MetricsAddr, err)
		case c.MetricsAddr == c.Addr && port != "0":
			add("MetricsAddr %q is Addr's address; give the metrics listener a port of its own, e.g. 127.0.0.1:9090, or leave it empty to serve /metrics on Addr", c.MetricsAddr)
		}
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
			add("PublicURL %q is not an absolute http(s) base URL; use the scheme and host HubSpot calls, e.g. https://crm.example.com", c.PublicURL)
		}
	}
	if c.callsHubSpot() {
		if c.HubSpotAccessToken == "" {
			add("HubSpotAccessToken is empty; set it to your private app's access token, or turn the workers off (DisableSyncWorker, DisableOutboundWorker)")
		}
		if u, err := url.Parse(c.HubSpotAPIBase); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("HubSpotAPIBase %q is not an absolute http(s) URL; leave it unset for %s", c.HubSpotAPIBase, hubspot.BaseURLDefault)
		}
	}
	if !c.DisableWebhooks && c.HubSpotClientSecret == "" {
		add("HubSpotClientSecret is empty; set it to your app's client secret, or turn the webhook receiver off (DisableWebhooks)")
	}
	if c.HubSpotAppID != "" {
		if n, err := strconv.ParseInt(c.HubSpotAppID, 10, 64); err != nil || n <= 0 {
			add("HubSpotAppID %q is not a positive number; set it to your app's numeric id (app settings, \"App ID\")", c.HubSpotAppID)
		}
	}
	if c.HubSpotPortalID != "" {
		if n, err := strconv.ParseInt(c.HubSpotPortalID, 10, 64); err != nil || n <= 0 {
			add("HubSpotPortalID %q is not a positive number; set it to your HubSpot account's id (the number in app.hubspot.com/contacts/<id>), or leave it empty to ask HubSpot", c.HubSpotPortalID)
		}
	}
	if err := c.Drift.validate(); err != nil {
		errs = append(errs, err)
	}
	// Secrets and keys travel in HTTP headers (or are compared with one): a
	// line break or another control character, often the trailing newline of
	// a secret read from a file, would make every call or every sign-in fail.
	for _, v := range []struct{ name, value string }{
		{"HubSpotAccessToken", c.HubSpotAccessToken}, {"HubSpotClientSecret", c.HubSpotClientSecret},
		{"AdminToken", c.AdminToken}, {"CronSecret", c.CronSecret}, {"QStashToken", c.QStashToken},
		{"QStashCurrentSigningKey", c.QStashCurrentSigningKey}, {"QStashNextSigningKey", c.QStashNextSigningKey},
		{"FlowControlKey", c.FlowControlKey},
	} {
		if p := headerProblem(v.value); p != "" {
			add("%s %s (a trailing newline from a file?); remove it", v.name, p)
		}
	}
	for i, t := range c.APITokens {
		if p := headerProblem(t); p != "" {
			add("APITokens: token %d of %d %s (a trailing newline from a file?); remove it", i+1, len(c.APITokens), p)
		}
	}
	if c.AdminToken != "" && len(c.AdminToken) < TokenMinLength {
		add("AdminToken is %d characters long; use a random token of at least %d characters (e.g. openssl rand -hex 32)", len(c.AdminToken), TokenMinLength)
	}
	for i, t := range c.APITokens {
		if len(t) < TokenMinLength {
			add("APITokens: token %d of %d is %d characters long; use random tokens of at least %d characters (e.g. openssl rand -hex 32)", i+1, len(c.APITokens), len(t), TokenMinLength)
		}
	}
	if c.RateLimit < 1 {
		add("RateLimit is %d; set the HubSpot calls allowed per 10 s (100, 110, 190 or 250 by tier)", c.RateLimit)
	}
	if c.DailyLimit > 0 && c.DailyLimit < c.RateLimit {
		add("DailyLimit %d is below RateLimit %d; raise it, or set it negative for no daily limit", c.DailyLimit, c.RateLimit)
	}
	if c.HubSpotTimeZone != "" {
		if _, err := time.LoadLocation(c.HubSpotTimeZone); err != nil {
			add("HubSpotTimeZone %q is not a time zone (%v); use the IANA name of the HubSpot account's zone, e.g. America/New_York, or leave it empty to ask HubSpot", c.HubSpotTimeZone, err)
		}
	}
	if c.BudgetCallLead > budget.WindowDefault {
		add("BudgetCallLead is %s; use at most %s (each grant is counted for %s plus it), or 0 for %s", c.BudgetCallLead, budget.WindowDefault, budget.WindowDefault, budget.CallLeadDefault)
	}
	if c.OutboundFillWait > outbound.FillWaitMax {
		add("OutboundFillWait is %s; use at most %s, or 0 for %s", c.OutboundFillWait, outbound.FillWaitMax, outbound.FillWaitDefault)
	}
	if c.OutboundConcurrency < 0 || c.OutboundConcurrency > OutboundConcurrencyMax {
		add("OutboundConcurrency is %d; use 1..%d, or 0 for %d", c.OutboundConcurrency, OutboundConcurrencyMax, outbound.ConcurrencyDefault)
	}
	if c.OutboundHold > outbound.HoldMax {
		add("OutboundHold is %s; use at most %s (a held change waits up to about two of it), 0 for %s, or negative for never", c.OutboundHold, outbound.HoldMax, outbound.HoldDefault)
	}
	if c.OutboundBudgetAhead > outbound.BudgetAheadMax {
		add("OutboundBudgetAhead is %s; use at most %s, 0 for %s, or negative for never", c.OutboundBudgetAhead, outbound.BudgetAheadMax, outbound.BudgetAheadDefault)
	}
	if c.SyncApplyConcurrency < 0 || c.SyncApplyConcurrency > inbound.ApplyConcurrencyMax {
		add("SyncApplyConcurrency is %d; use 1..%d (1 applies one event at a time), or 0 for %d (1 on SQLite)", c.SyncApplyConcurrency, inbound.ApplyConcurrencyMax, inbound.ApplyConcurrencyDefault)
	}
	if c.BudgetRetrySpread > budget.WindowDefault {
		add("BudgetRetrySpread is %s; use at most %s, or 0 for %s", c.BudgetRetrySpread, budget.WindowDefault, budget.RetrySpreadDefault)
	}
	if err := c.Cleanup.Validate(); err != nil {
		add("cleanup: %v", err)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"CleanupInterval", c.CleanupInterval}, {"DrainTimeout", c.DrainTimeout}, {"ReconcileAfter", c.ReconcileAfter}, {"HubSpotTimeout", c.HubSpotTimeout}, {"MaxEventSkew", c.MaxEventSkew},
		{"StatsTTL", c.StatsTTL}, {"AuthFailureLogInterval", c.AuthFailureLogInterval},
		{"HTTP.ReadHeaderTimeout", c.HTTP.ReadHeaderTimeout}, {"HTTP.ReadTimeout", c.HTTP.ReadTimeout},
		{"HTTP.WriteTimeout", c.HTTP.WriteTimeout}, {"HTTP.IdleTimeout", c.HTTP.IdleTimeout}} {
		if d.v < 0 {
			add("%s is %s; use a positive duration (0 means the default)", d.name, d.v)
		}
	}
	if c.HTTP.MaxHeaderBytes < 0 {
		add("HTTP.MaxHeaderBytes is %d; use a positive size (0 means the default)", c.HTTP.MaxHeaderBytes)
	}
	if err := c.Store.Retry.Validate(); err != nil {
		add("%v", err)
	}
	errs = append(errs, c.validateDispatch()...)
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
}

// syncApplyConcurrency is the SyncWorker's ApplyConcurrency on a database of
// dialect d: by default the inbound default, but one apply at a time on
// SQLite (see Config.SyncApplyConcurrency).
func syncApplyConcurrency(configured int, d store.Dialect) int {
	if configured == 0 && d == store.SQLite {
		return 1
	}
	return configured // 0: the inbound default
}

// outboundCallTimeout is the outbound worker's per-call deadline: the
// client's timeout, but no longer than outbound.HTTPTimeoutDefault, so that a
// crashed replica's events are claimed again within about 16 s (issue 16).
func outboundCallTimeout(hubspotTimeout time.Duration) time.Duration {
	return min(hubspotTimeout, outbound.HTTPTimeoutDefault)
}

// headerProblem says why v cannot travel in an HTTP header value, or "".
func headerProblem(v string) string {
	if !utf8.ValidString(v) {
		return "is not valid UTF-8"
	}
	if strings.ContainsFunc(v, unicode.IsControl) {
		return "holds a control character"
	}
	return ""
}
