package server

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
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
	// ReconcileAfterDefault is how long a due event may wait unclaimed before the
	// reconciliation sweep reports it (seed 002: pendingOlderThanMinutes 10).
	ReconcileAfterDefault = 10 * time.Minute
	// BudgetKeyDefault is the budget key of the configured private app.
	BudgetKeyDefault = "hubspot:private-app:primary"
)

// Config configures a Server. The zero value of every field means its default;
// the settings HubSpot needs have none and are required by the parts that use
// them. Each field names the environment variable `hubsync serve` reads it from.
type Config struct {
	// DatabaseURL is HUBSYNC_DATABASE_URL: sqlite:PATH, postgres://… or mysql://….
	// Default DatabaseURLDefault. SQLite is migrated on start; PostgreSQL and
	// MySQL must have been migrated with `hubsync migrate`.
	DatabaseURL string
	// Addr is HUBSYNC_ADDR, the listen address; default AddrDefault. Use port 0
	// for any free port (see Server.Addr).
	Addr string
	// PublicURL is HUBSYNC_PUBLIC_URL, the scheme and host HubSpot calls
	// (webhook signatures cover it). Empty: rebuilt from each request, which
	// only fits a receiver that HubSpot reaches without a proxy.
	PublicURL string
	// HubSpotAPIBase is HUBSPOT_API_BASE; default hubspot.BaseURLDefault.
	HubSpotAPIBase string
	// HubSpotAccessToken is HUBSPOT_ACCESS_TOKEN, the private app's token;
	// required by the SyncWorker and the outbound worker.
	HubSpotAccessToken string
	// HubSpotClientSecret is HUBSPOT_CLIENT_SECRET, which signs webhooks;
	// required by the webhook receiver.
	HubSpotClientSecret string
	// HubSpotAppID is HUBSPOT_APP_ID, the app's numeric id; with it, webhook
	// events caused by hubsync's own writes are recognised as echoes.
	HubSpotAppID string
	// AdminToken is HUBSYNC_ADMIN_TOKEN; empty turns the admin API off (404).
	AdminToken string

	// RateLimit is HUBSYNC_HUBSPOT_RATE_LIMIT, HubSpot calls per 10 s shared by
	// every replica; default RateLimitDefault.
	RateLimit int
	// DailyLimit is HUBSYNC_HUBSPOT_DAILY_LIMIT; 0 means budget.DailyLimitDefault,
	// negative none.
	DailyLimit int
	// BudgetKey names the budget shared by every replica; default BudgetKeyDefault.
	BudgetKey string
	// HubSpotTimeout bounds one HubSpot request; default hubspot.TimeoutDefault.
	HubSpotTimeout time.Duration

	// The parts of the service, all on by default; switch some off for split
	// deployments.
	DisableWebhooks       bool
	DisableSyncWorker     bool
	DisableOutboundWorker bool
	DisableRelay          bool
	DisableCleanup        bool
	DisableAPI            bool

	// Cleanup sets the retention of processed events.
	Cleanup CleanupConfig
	// CleanupInterval is how often the cleanup runs; default CleanupIntervalDefault.
	CleanupInterval time.Duration
	// DrainTimeout bounds a graceful stop; default DrainTimeoutDefault.
	DrainTimeout time.Duration
	// ReconcileAfter is the age past which the reconciliation sweep reports a due
	// event nobody claimed; default ReconcileAfterDefault.
	ReconcileAfter time.Duration
	// MaxEventSkew is HUBSYNC_MAX_EVENT_SKEW, how far ahead of this process's
	// clock a webhook event's occurredAt may lie before the receiver (and the
	// SyncWorker) refuse it; default inbound.MaxEventSkewDefault.
	MaxEventSkew time.Duration
	// Store configures the store (retry policy, clock).
	Store store.Config
	// Logger receives the service's logs; default slog.Default().
	Logger *slog.Logger
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.DatabaseURL = cmp.Or(c.DatabaseURL, DatabaseURLDefault)
	c.Addr = cmp.Or(c.Addr, AddrDefault)
	c.HubSpotAPIBase = cmp.Or(c.HubSpotAPIBase, hubspot.BaseURLDefault)
	c.RateLimit = cmp.Or(c.RateLimit, RateLimitDefault)
	c.BudgetKey = cmp.Or(c.BudgetKey, BudgetKeyDefault)
	c.HubSpotTimeout = cmp.Or(c.HubSpotTimeout, hubspot.TimeoutDefault)
	c.Cleanup = c.Cleanup.WithDefaults()
	c.CleanupInterval = cmp.Or(c.CleanupInterval, CleanupIntervalDefault)
	c.DrainTimeout = cmp.Or(c.DrainTimeout, DrainTimeoutDefault)
	c.ReconcileAfter = cmp.Or(c.ReconcileAfter, ReconcileAfterDefault)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("configuration")

// callsHubSpot reports whether a part that calls the HubSpot API is on.
func (c Config) callsHubSpot() bool { return !c.DisableSyncWorker || !c.DisableOutboundWorker }

// Validate reports every setting that cannot work, each naming the setting (its
// environment variable) and the fix.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if _, err := store.ParseDatabaseURL(c.DatabaseURL); err != nil {
		add("HUBSYNC_DATABASE_URL: %v", err)
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		add("HUBSYNC_ADDR %q is not host:port (%v); use e.g. 127.0.0.1:8080 or :8080", c.Addr, err)
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
			add("HUBSYNC_PUBLIC_URL %q is not an absolute http(s) base URL; use the scheme and host HubSpot calls, e.g. https://crm.example.com", c.PublicURL)
		}
	}
	if c.callsHubSpot() {
		if c.HubSpotAccessToken == "" {
			add("HUBSPOT_ACCESS_TOKEN is empty; set it to your private app's access token, or run with -sync-worker=false -outbound-worker=false")
		}
		if u, err := url.Parse(c.HubSpotAPIBase); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("HUBSPOT_API_BASE %q is not an absolute http(s) URL; leave it unset for %s", c.HubSpotAPIBase, hubspot.BaseURLDefault)
		}
	}
	if !c.DisableWebhooks && c.HubSpotClientSecret == "" {
		add("HUBSPOT_CLIENT_SECRET is empty; set it to your app's client secret, or run with -webhooks=false")
	}
	if c.HubSpotAppID != "" {
		if n, err := strconv.ParseInt(c.HubSpotAppID, 10, 64); err != nil || n <= 0 {
			add("HUBSPOT_APP_ID %q is not a positive number; set it to your app's numeric id (app settings, \"App ID\")", c.HubSpotAppID)
		}
	}
	if c.RateLimit < 1 {
		add("HUBSYNC_HUBSPOT_RATE_LIMIT is %d; set the HubSpot calls allowed per 10 s (100, 110, 190 or 250 by tier)", c.RateLimit)
	}
	if c.DailyLimit > 0 && c.DailyLimit < c.RateLimit {
		add("HUBSYNC_HUBSPOT_DAILY_LIMIT %d is below HUBSYNC_HUBSPOT_RATE_LIMIT %d; raise it, or set it negative for no daily limit", c.DailyLimit, c.RateLimit)
	}
	if err := c.Cleanup.validate(); err != nil {
		add("cleanup: %v", err)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"CleanupInterval", c.CleanupInterval}, {"DrainTimeout", c.DrainTimeout}, {"ReconcileAfter", c.ReconcileAfter}, {"HubSpotTimeout", c.HubSpotTimeout}, {"MaxEventSkew (HUBSYNC_MAX_EVENT_SKEW)", c.MaxEventSkew}} {
		if d.v < 0 {
			add("%s is %s; use a positive duration (0 means the default)", d.name, d.v)
		}
	}
	if err := c.Store.Retry.Validate(); err != nil {
		add("%v", err)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
}
