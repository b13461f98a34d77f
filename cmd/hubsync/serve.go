package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/idempotency"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/server"
)

func init() {
	register("serve", command{summary: "run the sync service (webhooks, workers, relay, cleanup, API, metrics)", run: runServe})
}

// envFlags binds flags whose defaults come from the environment, and remembers
// environment values that did not parse so the error names the variable.
type envFlags struct {
	fs      *flag.FlagSet
	errs    []error
	secrets []func() error // fill secret flags left empty from the environment
}

// secret binds a flag whose environment default is not shown by -h, so that
// help output never prints a token. Call resolve after Parse.
func (e *envFlags) secret(p *string, name, env, usage string) {
	e.fs.StringVar(p, name, "", usage+" ("+env+"; prefer the environment variable)")
	e.secrets = append(e.secrets, func() error {
		if *p == "" {
			*p = os.Getenv(env)
		}
		// A secret travels in an HTTP header (or is compared with one): a
		// trailing newline from a secrets file would fail every call.
		if strings.ContainsFunc(*p, unicode.IsControl) {
			return fmt.Errorf("%s/-%s holds a line break or another control character (a trailing newline from a file?); remove it", env, name)
		}
		return nil
	})
}

// resolve applies the environment to the secret flags left empty, and
// refuses a secret that cannot be sent in a header.
func (e *envFlags) resolve() error {
	var errs []error
	for _, f := range e.secrets {
		errs = append(errs, f())
	}
	return errors.Join(errs...)
}

func (e *envFlags) string(p *string, name, env, def, usage string) {
	e.fs.StringVar(p, name, envOr(env, def), usage+" ("+env+")")
}

func (e *envFlags) int(p *int, name, env string, def int, usage string) {
	v := def
	if s := os.Getenv(env); s != "" {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q is not a number; set it to an integer such as %d", env, s, def))
		} else {
			v = n
		}
	}
	e.fs.IntVar(p, name, v, usage+" ("+env+")")
}

func (e *envFlags) duration(p *time.Duration, name, env string, def time.Duration, usage string) {
	e.durationOf(p, name, env, def, usage, parseDuration)
}

// signedDuration is duration for a setting whose negative values mean
// something (its usage says what).
func (e *envFlags) signedDuration(p *time.Duration, name, env string, def time.Duration, usage string) {
	e.durationOf(p, name, env, def, usage, parseSignedDuration)
}

func (e *envFlags) durationOf(p *time.Duration, name, env string, def time.Duration, usage string, parse func(string) (time.Duration, error)) {
	v := def
	if s := os.Getenv(env); s != "" {
		d, err := parse(s)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q: %v", env, s, err))
		} else {
			v = d
		}
	}
	*p = v
	e.fs.Var(&durationValue{p: p, parse: parse}, name, usage+" ("+env+")")
}

// durationValue is a flag.Value accepting Go durations plus a "d" (days)
// suffix, parsed by parse.
type durationValue struct {
	p     *time.Duration
	parse func(string) (time.Duration, error)
}

func (d *durationValue) String() string {
	if d == nil || d.p == nil {
		return "0s"
	}
	return d.p.String()
}

func (d *durationValue) Set(s string) error {
	v, err := d.parse(s)
	if err != nil {
		return err
	}
	*d.p = v
	return nil
}

// maxDays keeps a day count within time.Duration (about 292 years).
const maxDays = 100_000

// parseDuration parses a Go duration or a number of days such as "30d".
func parseDuration(s string) (time.Duration, error) {
	d, err := parseSignedDuration(s)
	if err == nil && d < 0 {
		return 0, fmt.Errorf("%q is negative; write a duration of 0 or more, e.g. 30d, 12h or 90m", strings.TrimSpace(s))
	}
	return d, err
}

// parseSignedDuration is parseDuration allowing negative values ("-1s",
// "-1d"), for the settings where a negative one means something.
func parseSignedDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < -maxDays || n > maxDays {
			return 0, fmt.Errorf("%q is not a duration of at most %d days; write e.g. 30d, 12h or 90m", s, maxDays)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration; write e.g. 30d, 12h or 90m", s)
	}
	return d, nil
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", stderr)
	e := &envFlags{fs: fs}
	var cfg server.Config
	dbURL := databaseURLFlag(fs)
	e.string(&cfg.Addr, "addr", "HUBSYNC_ADDR", server.AddrDefault, "listen address")
	e.string(&cfg.MetricsAddr, "metrics-addr", "HUBSYNC_METRICS_ADDR", "", "a second listen address serving only /metrics (and /healthz); empty serves /metrics on -addr")
	e.string(&cfg.PublicURL, "public-url", "HUBSYNC_PUBLIC_URL", "", "scheme and host HubSpot calls webhooks on, e.g. https://crm.example.com")
	e.string(&cfg.HubSpotAPIBase, "hubspot-api-base", "HUBSPOT_API_BASE", "https://api.hubapi.com", "HubSpot API base URL")
	e.secret(&cfg.HubSpotAccessToken, "hubspot-access-token", "HUBSPOT_ACCESS_TOKEN", "private app access token")
	e.secret(&cfg.HubSpotClientSecret, "hubspot-client-secret", "HUBSPOT_CLIENT_SECRET", "app client secret that signs webhooks")
	e.string(&cfg.HubSpotAppID, "hubspot-app-id", "HUBSPOT_APP_ID", "", "app id, to recognise webhooks caused by hubsync's own writes")
	e.string(&cfg.HubSpotPortalID, "hubspot-portal-id", "HUBSPOT_PORTAL_ID", "", "HubSpot account id whose webhook events are applied (others are refused); empty asks HubSpot at start")
	e.secret(&cfg.AdminToken, "admin-token", "HUBSYNC_ADMIN_TOKEN", "bearer token of the admin API, at least 16 characters; empty turns it off")
	var apiTokens string
	e.secret(&apiTokens, "api-token", "HUBSYNC_API_TOKEN", "bearer token(s) of the records API and every /api route, comma-separated for rotation, each at least 16 characters; empty turns them off")
	e.int(&cfg.RateLimit, "rate-limit", "HUBSYNC_HUBSPOT_RATE_LIMIT", server.RateLimitDefault, "HubSpot calls per 10 s shared by all replicas (100, 110, 190 or 250 by tier)")
	e.int(&cfg.DailyLimit, "daily-limit", "HUBSYNC_HUBSPOT_DAILY_LIMIT", 0, "HubSpot calls per day (0: 250000; negative: none)")
	e.string(&cfg.HubSpotTimeZone, "time-zone", "HUBSYNC_HUBSPOT_TIME_ZONE", "", "the HubSpot account's time zone, at whose midnight the daily limit resets, e.g. America/New_York (empty: ask HubSpot at start)")
	e.duration(&cfg.BudgetCallLead, "budget-call-lead", "HUBSYNC_BUDGET_CALL_LEAD", budget.CallLeadDefault, "how long after the shared budget grants a call it may start; each grant is counted for 10 s plus this (at most 10s)")
	e.duration(&cfg.BudgetRetrySpread, "budget-retry-spread", "HUBSYNC_BUDGET_RETRY_SPREAD", budget.RetrySpreadDefault, "most random extra wait after a budget refusal, so replicas wake apart (at most 10s)")
	e.int(&cfg.BudgetPace, "budget-pace", "HUBSYNC_BUDGET_PACE", budget.PaceDefault, "calls booked ahead get at most this many times their even share of the limit per 1% of the window (negative: no cap)")
	e.signedDuration(&cfg.OutboundBudgetAhead, "outbound-budget-ahead", "HUBSYNC_OUTBOUND_BUDGET_AHEAD", outbound.BudgetAheadDefault, "how far ahead an outbound cycle may book its call when the budget's window is full, keeping its records (negative: never; at most 10s)")
	e.duration(&cfg.OutboundFillWait, "outbound-fill-wait", "HUBSYNC_OUTBOUND_FILL_WAIT", outbound.FillWaitDefault, "how long an outbound cycle may keep claiming to fill its batch calls (at most 1s)")
	e.signedDuration(&cfg.OutboundHold, "outbound-hold", "HUBSYNC_OUTBOUND_HOLD", outbound.HoldDefault, "while the HubSpot budget is short, how often outbound workers claim, so that calls fill (negative: claim at once; at most 10s)")
	e.int(&cfg.OutboundConcurrency, "outbound-concurrency", "HUBSYNC_OUTBOUND_CONCURRENCY", outbound.ConcurrencyDefault, fmt.Sprintf("how many outbound cycles each replica keeps in flight (at most %d)", server.OutboundConcurrencyMax))
	e.int(&cfg.SyncApplyConcurrency, "sync-apply-concurrency", "HUBSYNC_SYNC_APPLY_CONCURRENCY", 0, fmt.Sprintf("how many records the SyncWorker applies at once, each record's events in order (0: %d, but 1 on SQLite; at most %d)", inbound.ApplyConcurrencyDefault, inbound.ApplyConcurrencyMax))
	e.duration(&cfg.Cleanup.OutboundRetention, "outbound-retention", "HUBSYNC_OUTBOUND_RETENTION", ops.OutboundRetentionDefault, "keep processed outbound events this long")
	e.duration(&cfg.Cleanup.InboundRetention, "inbound-retention", "HUBSYNC_INBOUND_RETENTION", ops.InboundRetentionDefault, "keep processed inbound events this long (audit)")
	e.duration(&cfg.Cleanup.InternalRetention, "internal-retention", "HUBSYNC_INTERNAL_RETENTION", ops.InternalRetentionDefault, "keep processed internal events this long")
	e.duration(&cfg.Cleanup.IdempotencyRetention, "idempotency-retention", "HUBSYNC_IDEMPOTENCY_RETENTION", idempotency.RetentionDefault, "honour API Idempotency-Keys this long")
	e.duration(&cfg.Cleanup.SubscriptionRetention, "subscription-retention", "HUBSYNC_SUBSCRIPTION_RETENTION", ops.SubscriptionRetentionDefault, "keep synced or superseded subscription requests this long after their last change (a contact's newest is kept always)")
	e.duration(&cfg.Cleanup.DiscardedRetention, "discarded-retention", "HUBSYNC_DISCARDED_RETENTION", ops.DiscardedRetentionDefault, "keep discarded dead letters, with their reason, this long")
	e.duration(&cfg.CleanupInterval, "cleanup-interval", "HUBSYNC_CLEANUP_INTERVAL", server.CleanupIntervalDefault, "how often the cleanup runs")
	e.duration(&cfg.DrainTimeout, "drain-timeout", "HUBSYNC_DRAIN_TIMEOUT", server.DrainTimeoutDefault, "how long a graceful stop may take")
	e.duration(&cfg.MaxEventSkew, "max-event-skew", "HUBSYNC_MAX_EVENT_SKEW", inbound.MaxEventSkewDefault, "refuse webhook events whose occurredAt is further ahead of this clock")
	finishDrift := driftSettings(e, &cfg.Drift, true)
	dispatchFlags(e, &cfg)
	webhooks := fs.Bool("webhooks", true, "serve POST /webhooks/hubspot")
	syncWorker := fs.Bool("sync-worker", true, "run the SyncWorker (inbound events → records)")
	outboundWorker := fs.Bool("outbound-worker", true, "run the outbound worker (records → HubSpot)")
	relay := fs.Bool("relay", true, "run the internal outbox relay")
	cleanup := fs.Bool("cleanup", true, "run the cleanup schedule")
	api := fs.Bool("api", true, "serve /api/records (with HUBSYNC_API_TOKEN)")
	mappingPath := fs.String("mapping", os.Getenv("HUBSYNC_MAPPING"), "YAML mapping file of local fields to HubSpot properties; empty: the default mapping (HUBSYNC_MAPPING)")
	signatures := fs.String("webhook-signatures", envOr("HUBSYNC_WEBHOOK_SIGNATURES", "v3"), "webhook signature versions accepted, e.g. v3 or v3,v2,v1 (HUBSYNC_WEBHOOK_SIGNATURES)")
	proxies := fs.String("trusted-proxies", os.Getenv("HUBSYNC_TRUSTED_PROXIES"), "comma-separated IPs/CIDRs whose X-Forwarded-Proto/-Host are believed (HUBSYNC_TRUSTED_PROXIES)")
	logLevel := fs.String("log-level", envOr("HUBSYNC_LOG_LEVEL", "info"), "debug, info, warn or error (HUBSYNC_LOG_LEVEL)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: hubsync serve [flags]\n\nEvery flag but the part switches (-webhooks, -sync-worker, -outbound-worker,\n-relay, -cleanup, -api) also reads the environment variable named in its\ndescription; a flag given on the command line wins.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q: %w", fs.Arg(0), errUsage)
	}
	if len(e.errs) > 0 {
		return errors.Join(e.errs...)
	}
	if err := e.resolve(); err != nil {
		return err
	}
	cfg.DatabaseURL = *dbURL
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("HUBSYNC_LOG_LEVEL/-log-level %q: use debug, info, warn or error", *logLevel)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg.DisableWebhooks, cfg.DisableSyncWorker, cfg.DisableOutboundWorker = !*webhooks, !*syncWorker, !*outboundWorker
	cfg.DisableRelay, cfg.DisableCleanup, cfg.DisableAPI = !*relay, !*cleanup, !*api
	if err := webhookSettings(&cfg, *mappingPath, *signatures, *proxies); err != nil {
		return err
	}
	if err := finishDrift(); err != nil {
		return err
	}
	if err := finishDispatch(&cfg); err != nil {
		return err
	}
	cfg.APITokens = splitTokens(apiTokens)
	if !cfg.DisableAPI && len(cfg.APITokens) == 0 {
		cfg.Logger.Info("hubsync: HUBSYNC_API_TOKEN is not set: the records API (/api/...) is off and answers 404")
	}
	if cfg.AdminToken == "" {
		cfg.Logger.Info("hubsync: HUBSYNC_ADMIN_TOKEN is not set: the admin API (/admin/...) is off and answers 404")
	}
	if !cfg.DisableWebhooks && cfg.PublicURL == "" {
		cfg.Logger.Warn("hubsync: HUBSYNC_PUBLIC_URL is not set: webhook signatures are checked against the request's own Host (and X-Forwarded-* of HUBSYNC_TRUSTED_PROXIES); set it to the URL HubSpot calls")
	}

	tp, stopTracing, err := tracing(ctx, os.Getenv)
	if err != nil {
		return err
	}
	defer func() {
		// Flush the buffered spans; a collector that is down costs at most this.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := stopTracing(fctx); err != nil {
			cfg.Logger.Warn("hubsync: flush traces", "err", err)
		}
	}()
	if tp != nil {
		cfg.TracerProvider = tp
		cfg.Logger.Info("hubsync: tracing on: spans go to the OTLP endpoint of OTEL_EXPORTER_OTLP_ENDPOINT")
	}

	srv, err := server.New(cfg)
	if err != nil {
		return namingSettings(err)
	}
	if err := srv.Start(ctx); err != nil {
		return namingSettings(err)
	}
	fmt.Fprintf(stdout, "hubsync serving on http://%s\n", srv.Addr())
	if a := srv.MetricsAddr(); a != "" {
		fmt.Fprintf(stdout, "metrics on http://%s/metrics\n", a)
	}
	return namingSettings(srv.Wait())
}

// splitTokens splits a comma-separated token list, dropping blanks around and
// between them.
func splitTokens(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}
