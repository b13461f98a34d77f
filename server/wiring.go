package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	hubsync "github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/idempotency"
	"github.com/hubsync/hubsync/internal/eventtrace"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/relay"
	"github.com/hubsync/hubsync/store"
)

// newBudget returns the call budget shared by every replica through the
// database, so that all of them together stay under HubSpot's limit.
func newBudget(db *hubsync.DB, cfg Config, zone *time.Location) (budget.Budget, error) {
	b, err := budget.NewSQL(db.SQL, db.Dialect, budget.Config{
		Limit: cfg.RateLimit, DailyLimit: cfg.DailyLimit, CallLead: cfg.BudgetCallLead, RetrySpread: cfg.BudgetRetrySpread, Pace: cfg.BudgetPace,
		TimeZone: zone,
	})
	if err != nil {
		return nil, fmt.Errorf("RateLimit/DailyLimit/BudgetCallLead/BudgetRetrySpread/BudgetPace: %w", err)
	}
	return b, nil
}

// accountZoneTimeout bounds the question for the account's time zone at start.
const accountZoneTimeout = 5 * time.Second

// account returns what the configuration does not say of the HubSpot
// account and HubSpot does, asked once at start (GET
// /account-info/v3/details, outside any budget): its time zone, whose
// midnight resets the daily limit (see AccountZone), and its portal id,
// whose webhook events alone are applied. zone is nil when unknown, as for
// a replica that never calls HubSpot and was not told it; portal is ""
// when unknown. A configured portal id HubSpot contradicts is an error.
func (s *Server) account(ctx context.Context) (zone *time.Location, portal string, askLater bool, err error) {
	cfg := s.cfg
	if cfg.HubSpotPortalID != "" {
		// As events spell it (012345 and +12345 are 12345); validated by Config.Validate.
		n, _ := strconv.ParseInt(cfg.HubSpotPortalID, 10, 64)
		portal = strconv.FormatInt(n, 10)
	}
	askZone := cfg.HubSpotTimeZone == "" && cfg.callsHubSpot()
	askPortal := !cfg.DisableWebhooks && cfg.HubSpotAccessToken != ""
	if !askZone && !askPortal {
		if cfg.HubSpotTimeZone != "" {
			zone, _ = time.LoadLocation(cfg.HubSpotTimeZone) // validated by Config.Validate
		}
		return zone, portal, false, nil
	}
	d, err := accountDetails(ctx, cfg.HubSpotAPIBase, cfg.HubSpotAccessToken)
	if cfg.HubSpotTimeZone != "" {
		zone, _ = time.LoadLocation(cfg.HubSpotTimeZone)
	} else if cfg.callsHubSpot() {
		zone = s.detailsZone(d, err)
	}
	switch {
	case !askPortal:
	case err != nil:
		if portal == "" {
			s.log.Warn("HubSpot did not say the account's portal id: webhook events of other HubSpot accounts are not refused until it does (asked again in the background); set HUBSPOT_PORTAL_ID", "err", err)
			askLater = true
		}
	case d.PortalID <= 0:
		if portal == "" {
			s.log.Warn("HubSpot's account details carry no portal id: webhook events of other HubSpot accounts are not refused; set HUBSPOT_PORTAL_ID")
		}
	case portal == "":
		portal = strconv.FormatInt(d.PortalID, 10)
		s.log.Info("HubSpot account: webhook events of other accounts are refused", "portal_id", portal)
	case portal != strconv.FormatInt(d.PortalID, 10):
		return nil, "", false, fmt.Errorf("HubSpotPortalID is %s, but the access token (HubSpotAccessToken) belongs to HubSpot account %d; set it to %d, or use that account's token", portal, d.PortalID, d.PortalID)
	}
	return zone, portal, askLater, nil
}

// accountDetails asks HubSpot for the access token's account (GET
// /account-info/v3/details, outside any budget), waiting at most
// accountZoneTimeout.
func accountDetails(ctx context.Context, apiBase, token string) (*hubspot.AccountDetails, error) {
	c, err := hubspot.NewClient(hubspot.Config{BaseURL: apiBase, AccessToken: token, Timeout: accountZoneTimeout})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, accountZoneTimeout)
	defer cancel()
	return c.AccountDetails(ctx)
}

// portalLookupFirst and portalLookupMax bound the waits between the
// background questions for the account's portal id (portalLookup); tests
// shorten the first.
var portalLookupFirst = 5 * time.Second

const portalLookupMax = 5 * time.Minute

// portalLookup asks HubSpot for the account's portal id in the background,
// after the question at start failed, until it answers; then the webhook
// receiver refuses other accounts' events from then on.
type portalLookup struct {
	s      *Server
	set    func(string)
	cancel context.CancelFunc
	done   chan struct{}
}

func (p *portalLookup) start(ctx context.Context) error {
	ctx, p.cancel = context.WithCancel(ctx)
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		cfg := p.s.cfg
		for wait := portalLookupFirst; ; wait = min(2*wait, portalLookupMax) {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			d, err := accountDetails(ctx, cfg.HubSpotAPIBase, cfg.HubSpotAccessToken)
			if err == nil && d.PortalID > 0 {
				id := strconv.FormatInt(d.PortalID, 10)
				p.set(id)
				p.s.log.Info("HubSpot account: webhook events of other accounts are refused from now on", "portal_id", id)
				return
			}
			p.s.log.Debug("HubSpot did not say the account's portal id; asking again", "err", err, "in", min(2*wait, portalLookupMax))
		}
	}()
	return nil
}

func (p *portalLookup) stop(ctx context.Context) error {
	p.cancel()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// detailsZone is the time zone of the account's details d (read with err),
// or nil with a warning (see AccountZone).
func (s *Server) detailsZone(d *hubspot.AccountDetails, err error) *time.Location {
	if err == nil {
		if d.TimeZone == "" {
			err = errors.New("no timeZone in the account's details")
		} else {
			var loc *time.Location
			if loc, err = time.LoadLocation(d.TimeZone); err == nil {
				s.log.Info("HubSpot account time zone: the daily limit resets at its midnight", "zone", loc.String())
				return loc
			}
			err = fmt.Errorf("the account's timeZone %q: %w", d.TimeZone, err)
		}
	}
	warnZone(s.log, err)
	return nil
}

// warnZone logs why the account's time zone is unknown.
func warnZone(log *slog.Logger, err error) {
	if errors.Is(err, hubspot.ErrAuth) {
		log.Warn("HubSpot refused the access token (HUBSPOT_ACCESS_TOKEN) when asked for the account's time zone; check the token and the app's scopes", "err", err)
	} else {
		log.Warn("HubSpot did not say the account's time zone: the budget counts days in the zone another replica recorded, else in UTC; set HUBSYNC_HUBSPOT_TIME_ZONE to the account's zone", "err", err)
	}
}

// AccountZone returns the HubSpot account's time zone, at whose midnight
// HubSpot resets the daily limit: name when set (an IANA name; an error when
// it is not one); else the zone HubSpot reports for the access token's
// account (GET /account-info/v3/details, one call outside any budget); else
// nil, with a warning to log: the shared budget then takes the zone another
// replica recorded, or counts UTC days (budget.Config.TimeZone).
func AccountZone(ctx context.Context, name, apiBase, token string, log *slog.Logger) (*time.Location, error) {
	if name != "" {
		loc, err := time.LoadLocation(name)
		if err != nil {
			return nil, fmt.Errorf("%q is not a time zone (%v); use the IANA name of the HubSpot account's zone, e.g. America/New_York, or leave it empty to ask HubSpot", name, err)
		}
		return loc, nil
	}
	c, err := hubspot.NewClient(hubspot.Config{BaseURL: apiBase, AccessToken: token, Timeout: accountZoneTimeout})
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, accountZoneTimeout)
		defer cancel()
		var loc *time.Location
		if loc, err = c.AccountLocation(ctx); err == nil {
			log.Info("HubSpot account time zone: the daily limit resets at its midnight", "zone", loc.String())
			return loc, nil
		}
	}
	warnZone(log, err)
	return nil, nil
}

// newHubSpotClient returns the one HubSpot client every part calls through.
// Its response hook is where the shared budget is calibrated, once, for every
// call (the inbound worker's reads as well as the outbound worker's writes),
// and where the HubSpot metrics are counted.
func (s *Server) newHubSpotClient(bud budget.Budget) (*hubspot.Client, error) {
	calibrate := budget.ObserveHubSpot(bud, s.cfg.BudgetKey, s.log)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	return hubspot.NewClient(hubspot.Config{
		BaseURL: s.cfg.HubSpotAPIBase, AccessToken: s.cfg.HubSpotAccessToken, Timeout: s.cfg.HubSpotTimeout, TimeZone: s.zone,
		HTTPClient: &http.Client{Timeout: s.cfg.HubSpotTimeout, Transport: &hubspotTransport{
			base: tr, tracer: eventtrace.Tracer(s.cfg.TracerProvider), duration: s.in.hubspotDuration,
		}},
		OnResponse: func(ctx context.Context, r hubspot.Response) {
			s.in.onHubSpotResponse(r.RateLimit, r.StatusCode)
			calibrate(ctx, r)
		},
	})
}

// hubspotTransport times every HubSpot request and traces it as a client
// span, the child of the span in the request's context (an outbound call, an
// inbound cycle's read).
type hubspotTransport struct {
	base     http.RoundTripper
	tracer   trace.Tracer
	duration *prometheus.HistogramVec
}

func (t *hubspotTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, span := t.tracer.Start(r.Context(), "HTTP "+r.Method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("http.request.method", r.Method), attribute.String("server.address", r.URL.Host),
		attribute.String("url.path", r.URL.Path)))
	defer span.End()
	start := time.Now()
	resp, err := t.base.RoundTrip(r.WithContext(ctx))
	t.duration.WithLabelValues(r.Method).Observe(time.Since(start).Seconds())
	if err != nil {
		eventtrace.Fail(span, err)
		return nil, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 400 {
		span.SetStatus(codes.Error, resp.Status)
	}
	return resp, nil
}

// relayPart builds the internal outbox relay (_System_OutboxEvent → the
// Server's Bus).
func (s *Server) relayPart(st store.Store) (*part, *relay.Relay, error) {
	r, err := relay.New(st, s.bus, relay.Config{Logger: s.log})
	if err != nil {
		return nil, nil, err
	}
	return &part{"relay", r.Start, r.Stop}, r, nil
}

// notifier is a worker that can be woken early.
type notifier interface{ Notify() }

// mountAPI puts api, the mux of every /api/… route, on mux behind apiGuard:
// the bearer tokens of Config.APITokens (401 without one), and on writes a
// JSON Content-Type (415), no foreign Origin (403) and a declared body within
// APIMaxBodyBytes (413). Without tokens nothing is mounted, so every /api/…
// path answers 404.
//
// To add an /api route, register it on api in build (as mountRecordsAPI
// does), never on mux; it is then authenticated and guarded like the records
// API, and failed attempts are counted in hubsync_auth_failures_total{area="api"}.
func (s *Server) mountAPI(mux, api *http.ServeMux) {
	if len(s.cfg.APITokens) == 0 {
		return
	}
	tokens := make([][]byte, len(s.cfg.APITokens))
	for i, t := range s.cfg.APITokens {
		tokens[i] = []byte(t)
	}
	g := &apiGuard{
		auth:    &bearerAuth{area: authAreaAPI, realm: "hubsync api", tokens: tokens, failures: s.failures},
		maxBody: APIMaxBodyBytes,
	}
	if u, err := url.Parse(s.cfg.PublicURL); err == nil && u.Host != "" {
		g.publicOrigin = u.Scheme + "://" + u.Host
	}
	mux.Handle("/api/", g.wrap(api))
}

// APIMaxBodyBytes bounds the body of an /api/… request; a larger declared
// Content-Length answers 413 before the body is read.
const APIMaxBodyBytes = records.MaxBodyBytes

// mountRecordsAPI serves /api/records/… from the records service. A successful
// write wakes the local workers, so a change does not wait for their next poll.
func (s *Server) mountRecordsAPI(api *http.ServeMux, recs *records.Service, wake []notifier) {
	h := idempotency.Middleware(idempotency.Config{Store: idempotency.NewStore(s.st), Scope: "records",
		Retention: s.cfg.Cleanup.IdempotencyRetention, Logger: s.log}, recs.Handler())
	api.Handle("/api/records/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead || len(wake) == 0 {
			h.ServeHTTP(w, r)
			return
		}
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		if sw.code < 300 {
			for _, n := range wake {
				n.Notify()
			}
		}
	}))
}
