package inbound

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/eventtrace"
	"github.com/hubsync/hubsync/internal/httpjson"
	"github.com/hubsync/hubsync/internal/logtext"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/store"
)

// Defaults of ReceiverConfig.
const (
	// MaxBodyBytesDefault bounds a delivery body. 100 HubSpot events take about
	// 40 KiB; 1 MiB leaves room without letting a caller exhaust memory.
	MaxBodyBytesDefault = 1 << 20
	// MaxSkewDefault is how far a v3 request timestamp may lie from now.
	MaxSkewDefault = hubspot.WebhookMaxSkewDefault
	// WebhookPath is where the Receiver is usually mounted.
	WebhookPath = "/webhooks/hubspot"
)

// Reject reasons passed to ReceiverHooks.OnReject.
const (
	RejectMethod           = "method"            // 405: not a POST
	RejectContentType      = "content_type"      // 415: not application/json
	RejectTooLarge         = "too_large"         // 413: body past MaxBodyBytes
	RejectBodyRead         = "body_read"         // 400: the body could not be read
	RejectSignatureMissing = "signature_missing" // 401: no signature header
	RejectSignatureInvalid = "signature_invalid" // 401: the signature does not match
	RejectSignatureVersion = "signature_version" // 401: signed only with a version not in Signatures
	RejectTimestampStale   = "timestamp_stale"   // 401: timestamp outside MaxSkew
	RejectMalformed        = "malformed"         // 400: not a JSON array (malformed events in an array are rejected one by one)
	RejectTooManyEvents    = "too_many_events"   // 400: more than hubspot.MaxWebhookBatch events
	RejectStore            = "store_error"       // 500: the events could not be stored; HubSpot retries
)

// ReceiverHooks are optional callbacks for metrics. They run on the request's
// goroutine and must be quick and safe for concurrent use.
type ReceiverHooks struct {
	// OnReject is called for every request not answered 200, with one of the
	// Reject* reasons and the HTTP status sent.
	OnReject func(reason string, status int)
	// OnAccept is called after a delivery was committed: events received,
	// rows inserted (the rest were duplicates), and the handling time.
	OnAccept func(events, inserted int, elapsed time.Duration)
	// OnStored is called after a delivery was committed, before OnAccept,
	// with its inserted rows split: pending, for the Worker, and echoes of
	// this app's own writes, stored processed (never claimed). A caller that
	// wakes the Worker needs only pending.
	OnStored func(pending, echoes int)
	// OnEventRejected is called for every event of an accepted delivery that
	// was refused (not stored as an inbound event), with its EventReject*
	// reason.
	OnEventRejected func(reason string)
}

// ReceiverConfig configures a Receiver. Zero fields take their defaults.
type ReceiverConfig struct {
	// Store keeps the events (required).
	Store store.InboundRepository
	// ClientSecret is the HubSpot app's client secret that signs webhooks (required).
	ClientSecret string
	// PublicURL is the scheme and host HubSpot calls, optionally with a path
	// prefix a proxy strips, e.g. "https://crm.example.com". The signed URI is
	// PublicURL + the request's path + query. Behind a proxy or TLS terminator
	// it must be set; when empty the URI is rebuilt from the request (Host
	// header, and https when the connection is TLS), which only fits a
	// receiver HubSpot reaches directly, or one behind TrustedProxies.
	PublicURL string
	// TrustedProxies are the peers (IP prefixes; a single address is a /32
	// or /128) whose X-Forwarded-Proto and X-Forwarded-Host are believed when
	// PublicURL is empty. From any other peer those headers are ignored, so a
	// caller cannot choose the URI its signature is checked against.
	TrustedProxies []netip.Prefix
	// Signatures are the signature versions accepted; nil means
	// hubspot.SignatureVersionsDefault (v3 only). v1 and v2 carry no
	// timestamp, so a captured delivery replays forever: widen this only for
	// an app that cannot send v3.
	Signatures []hubspot.SignatureVersion
	// MaxBodyBytes bounds the body; default MaxBodyBytesDefault. Larger bodies get 413.
	MaxBodyBytes int64
	// MaxSkew is how old (or how far ahead) a v3 timestamp may be; default MaxSkewDefault.
	MaxSkew time.Duration
	// MaxEventSkew is how far ahead of Now an event's occurredAt may lie; an
	// event further ahead is refused (EventRejectFuture), since its time would
	// win every later change of its fields. Default MaxEventSkewDefault.
	MaxEventSkew time.Duration
	// Rejected keeps the refused events of accepted deliveries with their
	// reason (a *RejectedLog); nil only logs and counts them.
	Rejected RejectedRecorder
	// Now is the clock for the timestamp check; default time.Now.
	Now func() time.Time
	// AppID is this app's HubSpot id; events whose changeSource/sourceId show
	// they came from this app (echoes of our own writes) are marked Echo in
	// their payload and stored processed, so that the Worker never claims
	// them. Empty recognises none: every event is stored pending.
	AppID string
	// PortalID is the HubSpot account (portal) id whose events are synced;
	// an event of another portal (an app installed in several accounts
	// sends each account's events to the same URL, signed alike) is refused
	// on its own (EventRejectForeignPortal). Empty checks none.
	PortalID string
	// Mapping resolves local object types; default mapping.Default().
	Mapping *mapping.Set
	// Logger receives warnings about rejected requests and store failures;
	// default slog.Default().
	Logger *slog.Logger
	// Hooks are optional metrics callbacks.
	Hooks ReceiverHooks
	// MaxConcurrentStores bounds the store transactions at once; deliveries
	// arriving while they run wait in arrival order and are written together
	// by the next one (group commit, GroupCommitEvents), which passes over a
	// delivery sharing a record with a transaction still running (once: the
	// one after takes it), so that two transactions seldom wait on one
	// record's sequence counter. Default
	// MaxConcurrentStoresDefault. Set 1 on SQLite: it admits one writer, and
	// its busy-wait lets an unlucky writer starve past HubSpot's 5 s timeout.
	MaxConcurrentStores int
	// GroupCommitEvents is the most events one store transaction writes when
	// waiting deliveries are written together (a single larger delivery is
	// still written whole); default GroupCommitEventsDefault. Negative writes
	// each delivery in its own transaction, and MaxConcurrentStores 0 then
	// means no bound.
	GroupCommitEvents int
	// StoreTimeout bounds one store transaction; default StoreTimeoutDefault.
	// A group's transaction runs to this bound even when the delivery that
	// leads it is abandoned, since the others wait on it.
	StoreTimeout time.Duration
	// TracerProvider traces each delivery, with a link to the trace of each
	// event it stored (see internal/eventtrace); nil traces nothing.
	TracerProvider trace.TracerProvider
}

// Defaults of ReceiverConfig's store fields.
const (
	MaxConcurrentStoresDefault = 2
	GroupCommitEventsDefault   = 1000
	StoreTimeoutDefault        = 30 * time.Second
)

func (c ReceiverConfig) withDefaults() ReceiverConfig {
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, MaxBodyBytesDefault)
	c.MaxSkew = cmp.Or(c.MaxSkew, MaxSkewDefault)
	c.MaxEventSkew = cmp.Or(c.MaxEventSkew, MaxEventSkewDefault)
	c.GroupCommitEvents = cmp.Or(c.GroupCommitEvents, GroupCommitEventsDefault)
	c.StoreTimeout = cmp.Or(c.StoreTimeout, StoreTimeoutDefault)
	if c.GroupCommitEvents > 0 {
		c.MaxConcurrentStores = cmp.Or(c.MaxConcurrentStores, MaxConcurrentStoresDefault)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Mapping == nil {
		c.Mapping = mapping.Default()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Signatures == nil {
		c.Signatures = hubspot.SignatureVersionsDefault
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	return c
}

func (c ReceiverConfig) validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("ReceiverConfig.Store is nil; pass store.Store.Inbound()"))
	}
	if c.ClientSecret == "" {
		errs = append(errs, errors.New("ReceiverConfig.ClientSecret is empty; set it to the HubSpot app's client secret"))
	}
	if c.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("ReceiverConfig.MaxBodyBytes is %d; use a positive size or 0 for %d", c.MaxBodyBytes, MaxBodyBytesDefault))
	}
	if c.MaxConcurrentStores < 0 {
		errs = append(errs, fmt.Errorf("ReceiverConfig.MaxConcurrentStores is %d; use a positive bound, or 0 for %d (none without group commit)", c.MaxConcurrentStores, MaxConcurrentStoresDefault))
	}
	if c.StoreTimeout < 0 {
		errs = append(errs, fmt.Errorf("ReceiverConfig.StoreTimeout is %s; use a positive duration or 0 for %s", c.StoreTimeout, StoreTimeoutDefault))
	}
	if c.MaxEventSkew < 0 {
		errs = append(errs, fmt.Errorf("ReceiverConfig.MaxEventSkew is %s; use a positive duration or 0 for %s", c.MaxEventSkew, MaxEventSkewDefault))
	}
	if c.MaxSkew < 0 {
		errs = append(errs, fmt.Errorf("ReceiverConfig.MaxSkew is %s; use a positive duration or 0 for %s", c.MaxSkew, MaxSkewDefault))
	}
	if len(c.Signatures) == 0 {
		errs = append(errs, errors.New("ReceiverConfig.Signatures is empty; accept at least v3 (nil means v3 only)"))
	}
	for _, v := range c.Signatures {
		if v != hubspot.SignatureV1 && v != hubspot.SignatureV2 && v != hubspot.SignatureV3 {
			errs = append(errs, fmt.Errorf("ReceiverConfig.Signatures has unknown version %q; use v3, v2 or v1", v))
		}
	}
	for _, p := range c.TrustedProxies {
		if !p.IsValid() {
			errs = append(errs, errors.New("ReceiverConfig.TrustedProxies has an invalid prefix; use addresses or CIDRs such as 10.0.0.0/8"))
		}
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			errs = append(errs, fmt.Errorf("ReceiverConfig.PublicURL %q is not an absolute http(s) base URL; use e.g. https://crm.example.com", c.PublicURL))
		}
	}
	return errors.Join(errs...)
}

// Receiver is the http.Handler for HubSpot webhook deliveries
// (POST /webhooks/hubspot). See the package documentation for what it stores.
//
// Answers: 200 after the delivery's events were committed (a replay stores
// nothing new and still gets 200); 401 for a missing, invalid or stale
// signature; 405 for a method other than POST; 413 for a body over
// MaxBodyBytes; 415 for a non-JSON content type; 400 for a body that is not a
// JSON array of at most 100 valid events; 500 when the store fails, so HubSpot
// retries. Error bodies are {"error":"<reason>","message":"..."}.
//
// One bad event does not sink a delivery: an event of the array that is
// malformed, has an invalid occurredAt, or one more than MaxEventSkew ahead is
// refused on its own (logged, counted by OnEventRejected and kept in Rejected
// with its reason), the others are stored, and the answer is 200 with the
// count of rejected events.
type Receiver struct {
	cfg ReceiverConfig
	// refused counts signature refusals not yet logged; lastRefusalLog is
	// when (Unix ns) the last was (logRefusal).
	refused        atomic.Int64
	lastRefusalLog atomic.Int64
	// portal is the portal id events must carry ("" checks none): the
	// configured PortalID, or one SetPortalID learned later.
	portal atomic.Pointer[string]
	group  *groupCommit  // nil when GroupCommitEvents is negative
	sem    chan struct{} // without group commit; nil when MaxConcurrentStores is 0
	tracer trace.Tracer
}

// NewReceiver validates cfg and returns a Receiver.
func NewReceiver(cfg ReceiverConfig) (*Receiver, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("inbound: %w", err)
	}
	rc := &Receiver{cfg: cfg, tracer: eventtrace.Tracer(cfg.TracerProvider)}
	rc.portal.Store(&cfg.PortalID)
	switch {
	case cfg.GroupCommitEvents > 0:
		rc.group = &groupCommit{write: cfg.Store.EnqueueBatch, slots: cfg.MaxConcurrentStores,
			maxEvents: cfg.GroupCommitEvents, timeout: cfg.StoreTimeout}
	case cfg.MaxConcurrentStores > 0:
		rc.sem = make(chan struct{}, cfg.MaxConcurrentStores)
	}
	return rc, nil
}

type receiveResponse struct {
	Received int `json:"received"`
	Inserted int `json:"inserted"`
	Rejected int `json:"rejected,omitempty"`
	// Retry says why the delivery is answered 503 although its valid events
	// are stored.
	Retry string `json:"retry,omitempty"`
}

type errorResponse struct {
	Error   string `json:"error"`
	Message string `json:"message,omitempty"`
}

// ServeHTTP handles one delivery.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ctx, span := rc.tracer.Start(r.Context(), "hubsync.webhook.delivery", trace.WithSpanKind(trace.SpanKindServer))
	defer span.End()
	r = r.WithContext(ctx)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		rc.reject(w, http.StatusMethodNotAllowed, RejectMethod, "use POST")
		return
	}
	if !isJSON(r.Header.Get("Content-Type")) {
		rc.reject(w, http.StatusUnsupportedMediaType, RejectContentType, "Content-Type must be application/json")
		return
	}
	// A declared size over the limit is refused before the body is read, so a
	// client waiting on `Expect: 100-continue` gets 413, not `100 Continue`.
	if r.ContentLength > rc.cfg.MaxBodyBytes {
		rc.reject(w, http.StatusRequestEntityTooLarge, RejectTooLarge, fmt.Sprintf("body exceeds %d bytes", rc.cfg.MaxBodyBytes))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, rc.cfg.MaxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			rc.reject(w, http.StatusRequestEntityTooLarge, RejectTooLarge, fmt.Sprintf("body exceeds %d bytes", rc.cfg.MaxBodyBytes))
			return
		}
		rc.reject(w, http.StatusBadRequest, RejectBodyRead, "could not read body")
		return
	}

	// Verify before parsing: nothing from an unauthenticated body is looked at.
	uri := rc.signedURI(r)
	if err := hubspot.VerifyRequestVersions(rc.cfg.Signatures, rc.cfg.ClientSecret, r.Method, uri, body, r.Header, rc.cfg.Now(), rc.cfg.MaxSkew); err != nil {
		reason := RejectSignatureInvalid
		switch {
		case errors.Is(err, hubspot.ErrSignatureMissing):
			reason = RejectSignatureMissing
		case errors.Is(err, hubspot.ErrSignatureVersion):
			reason = RejectSignatureVersion
		case errors.Is(err, hubspot.ErrTimestampStale):
			reason = RejectTimestampStale
		}
		rc.logRefusal(reason, uri, err)
		rc.reject(w, http.StatusUnauthorized, reason, "signature verification failed")
		return
	}

	parsed, bad, err := ParseDelivery(body)
	if err != nil {
		reason := RejectMalformed
		if errors.Is(err, ErrTooManyEvents) {
			reason = RejectTooManyEvents
		}
		rc.cfg.Logger.Warn("inbound: webhook rejected", "reason", reason, "err", err)
		rc.reject(w, http.StatusBadRequest, reason, err.Error())
		return
	}

	now := rc.cfg.Now()
	var rejects []RejectedEvent
	refuse := func(reason, msg string, raw []byte) {
		rejects = append(rejects, RejectedEvent{Reason: reason, Message: msg, RawPayload: rawText(raw), ReceivedAt: now})
	}
	for _, b := range bad {
		reason := EventRejectMalformed
		if b.Err.Field == "occurredAt" {
			reason = EventRejectOccurredAt
		}
		refuse(reason, b.Err.Error(), b.Raw)
	}
	evs := make([]store.InboundEvent, 0, len(parsed))
	seen := make(map[string]bool, len(parsed))
	portal := *rc.portal.Load()
	for _, p := range parsed {
		if seen[p.IdempotencyKey] { // a duplicate inside one delivery
			continue
		}
		seen[p.IdempotencyKey] = true
		if msg, ok := checkOccurredAt(p.Event.OccurredAt, now, rc.cfg.MaxEventSkew); !ok {
			refuse(EventRejectFuture, fmt.Sprintf("event %s of %s: %s", p.Event.EventID, p.Event.ObjectID, msg), p.Raw)
			rejects[len(rejects)-1].occurredAt = p.Event.OccurredAt
			continue
		}
		if portal != "" && p.Event.PortalID != portal {
			refuse(EventRejectForeignPortal, fmt.Sprintf("event %s of %s: portalId %q is not this account's (%s); an app installed in several accounts sends each its events, and hubsync syncs one", p.Event.EventID, p.Event.ObjectID, p.Event.PortalID, portal), p.Raw)
			continue
		}
		ev, err := p.Resolve(rc.cfg.Mapping, rc.cfg.AppID)
		if err != nil {
			refuse(EventRejectMalformed, err.Error(), p.Raw)
			continue
		}
		evs = append(evs, ev)
	}
	inserted, echoes := 0, 0
	if len(evs) > 0 {
		res, err := rc.store(r.Context(), evs)
		if err != nil {
			rc.cfg.Logger.Error("inbound: store webhook events", "events", len(evs), "err", err)
			rc.reject(w, http.StatusInternalServerError, RejectStore, "events not stored; retry")
			return
		}
		for i, x := range res {
			if x.Inserted {
				inserted++
				if evs[i].Status == store.StatusProcessed {
					echoes++
				}
			}
			// A duplicate links to the event stored by the first delivery.
			eventtrace.LinkEnqueued(ctx, x.ID)
		}
	}
	if len(rejects) > 0 {
		if err := rc.keepRejected(r.Context(), rejects); err != nil {
			// The valid events are stored; a retry stores nothing twice.
			rc.cfg.Logger.Error("inbound: store rejected webhook events", "events", len(rejects), "err", err)
			rc.reject(w, http.StatusInternalServerError, RejectStore, "rejected events not recorded; retry")
			return
		}
	}
	if h := rc.cfg.Hooks.OnStored; h != nil {
		h(inserted-echoes, echoes)
	}
	if h := rc.cfg.Hooks.OnAccept; h != nil {
		h(len(parsed)+len(bad), inserted, time.Since(start))
	}
	span.SetAttributes(attribute.Int("hubsync.events.received", len(parsed)+len(bad)), attribute.Int("hubsync.events.inserted", inserted),
		attribute.Int("hubsync.events.echoes", echoes), attribute.Int("hubsync.events.rejected", len(rejects)))
	resp := receiveResponse{Received: len(parsed) + len(bad), Inserted: inserted, Rejected: len(rejects)}
	if wait, ok := futureWait(rejects, now, rc.cfg.MaxEventSkew); ok {
		// An event ahead of this clock may be valid once the clock catches
		// up (it lags HubSpot's): ask HubSpot to deliver again. The events
		// stored now are stored once; a retry stores only the rest.
		resp.Retry = "an event's occurredAt is ahead of this server's clock; deliver again (check the server's clock)"
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
		httpjson.Write(w, http.StatusServiceUnavailable, resp)
		return
	}
	httpjson.Write(w, http.StatusOK, resp)
}

// SetPortalID sets the portal id events must carry from now on (see
// ReceiverConfig.PortalID), as learned after the Receiver was made.
func (rc *Receiver) SetPortalID(id string) { rc.portal.Store(&id) }

// futureWait reports whether rejects hold an event refused for lying ahead
// of the clock (EventRejectFuture), and how long until the furthest of them
// is within skew.
func futureWait(rejects []RejectedEvent, now time.Time, skew time.Duration) (time.Duration, bool) {
	var wait time.Duration
	found := false
	for _, rj := range rejects {
		if rj.Reason != EventRejectFuture {
			continue
		}
		found = true
		if rj.occurredAt > 0 {
			wait = max(wait, time.UnixMilli(rj.occurredAt).Sub(now.Add(skew)))
		}
	}
	return min(wait, maxFutureRetryAfter), found
}

// maxFutureRetryAfter bounds the Retry-After of a delivery refused for an
// event ahead of the clock (an occurredAt may be absurd).
const maxFutureRetryAfter = time.Hour

// refusalLogEvery bounds how often the Receiver logs refused signatures: a
// flood of forged requests must not flood the log (the metric counts each).
const refusalLogEvery = 10 * time.Second

// logRefusal logs a delivery refused for its signature, at most once per
// refusalLogEvery, with the number refused since the last line.
func (rc *Receiver) logRefusal(reason, uri string, err error) {
	rc.refused.Add(1)
	now := time.Now().UnixNano()
	last := rc.lastRefusalLog.Load()
	if last != 0 && now-last < int64(refusalLogEvery) || !rc.lastRefusalLog.CompareAndSwap(last, now) {
		return
	}
	rc.cfg.Logger.Warn("inbound: webhook rejected", "reason", reason, "uri", logtext.URI(uri), "err", err,
		"refused", rc.refused.Swap(0), "since", refusalLogEvery.String())
}

// checkOccurredAt refuses an occurredAt (epoch ms) that is not positive or
// lies more than skew ahead of now. It works on milliseconds, so no value
// overflows or wraps a time.
func checkOccurredAt(ms int64, now time.Time, skew time.Duration) (msg string, ok bool) {
	limit := now.UnixMilli() + skew.Milliseconds()
	switch {
	case ms <= 0:
		return fmt.Sprintf("occurredAt %d is not a positive epoch millisecond", ms), false
	case ms > limit:
		return fmt.Sprintf("occurredAt %d is more than %s ahead of now (%d)", ms, skew, now.UnixMilli()), false
	}
	return "", true
}

// keepRejected logs, counts and records the refused events of a delivery.
func (rc *Receiver) keepRejected(ctx context.Context, rejects []RejectedEvent) error {
	for _, rj := range rejects {
		rc.cfg.Logger.Warn("inbound: webhook event rejected", "reason", rj.Reason, "err", rj.Message)
		if h := rc.cfg.Hooks.OnEventRejected; h != nil {
			h(rj.Reason)
		}
	}
	if rc.cfg.Rejected == nil {
		return nil
	}
	return rc.cfg.Rejected.RecordRejected(ctx, rejects)
}

// store writes one delivery: with others waiting (group commit), or alone,
// waiting for a turn when writes are bounded.
func (rc *Receiver) store(ctx context.Context, evs []store.InboundEvent) ([]store.EnqueueResult, error) {
	if rc.group != nil {
		return rc.group.enqueue(ctx, evs)
	}
	if rc.sem != nil {
		select {
		case rc.sem <- struct{}{}:
			defer func() { <-rc.sem }()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return rc.cfg.Store.EnqueueBatch(ctx, evs)
}

// signedURI is the URI HubSpot signed: the public base URL and the request's
// path and query as sent. Without PublicURL the base is the request's own
// scheme and Host, or what a trusted proxy forwarded.
func (rc *Receiver) signedURI(r *http.Request) string {
	reqURI := r.RequestURI
	if reqURI == "" || !strings.HasPrefix(reqURI, "/") {
		reqURI = r.URL.RequestURI()
	}
	base := rc.cfg.PublicURL
	if base == "" {
		scheme, host := "http", r.Host
		if r.TLS != nil {
			scheme = "https"
		}
		if rc.fromTrustedProxy(r) {
			if p := firstForwarded(r.Header.Get("X-Forwarded-Proto")); p == "http" || p == "https" {
				scheme = p
			}
			if h := firstForwarded(r.Header.Get("X-Forwarded-Host")); h != "" {
				host = h
			}
		}
		base = scheme + "://" + host
	}
	return base + reqURI
}

// fromTrustedProxy reports whether the request's peer is in TrustedProxies.
func (rc *Receiver) fromTrustedProxy(r *http.Request) bool {
	if len(rc.cfg.TrustedProxies) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	addr := ap.Addr().Unmap()
	for _, p := range rc.cfg.TrustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// firstForwarded is the first value of a comma-separated forwarded header:
// the one the outermost trusted proxy saw.
func firstForwarded(v string) string {
	first, _, _ := strings.Cut(v, ",")
	return strings.ToLower(strings.TrimSpace(first))
}

// ParseTrustedProxies parses a comma-separated list of IP addresses and CIDR
// prefixes, e.g. "10.0.0.1, 192.168.0.0/16, ::1".
// An empty string is no proxy.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if strings.Contains(part, "/") {
			p, err := netip.ParsePrefix(part)
			if err != nil {
				return nil, fmt.Errorf("%q is not an IP address or CIDR prefix; write e.g. 10.0.0.1 or 10.0.0.0/8", part)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			return nil, fmt.Errorf("%q is not an IP address or CIDR prefix; write e.g. 10.0.0.1 or 10.0.0.0/8", part)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

func (rc *Receiver) reject(w http.ResponseWriter, status int, reason, msg string) {
	if h := rc.cfg.Hooks.OnReject; h != nil {
		h(reason, status)
	}
	httpjson.Write(w, status, errorResponse{Error: reason, Message: msg})
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}
