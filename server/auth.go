package server

import (
	"crypto/subtle"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hubsync/hubsync/internal/logtext"
)

// Bearer token rules and the failed-attempt log.
const (
	// TokenMinLength is the shortest API or admin token accepted: a shorter
	// one could be guessed over the network.
	TokenMinLength = 16
	// AuthFailureLogIntervalDefault bounds how often failed authentication
	// attempts are logged: at most one line per interval, carrying the count.
	AuthFailureLogIntervalDefault = 10 * time.Second
)

// The areas of hubsync_auth_failures_total.
const (
	authAreaAPI   = "api"
	authAreaAdmin = "admin"
	authAreaCron  = "cron"
)

// bearerAuth checks `Authorization: Bearer <token>` against a set of tokens
// (several, so a token can be rotated without downtime) and reports failures.
type bearerAuth struct {
	area     string
	realm    string
	tokens   [][]byte
	failures *authFailures
}

// allows reports whether r carries one of the tokens. Every token is compared,
// in constant time, whichever matches: the time taken says nothing about which
// one was close (only a token's length can leak, which is acceptable).
func (a *bearerAuth) allows(r *http.Request) bool {
	// The scheme is case-insensitive (RFC 9110 §11.1): "bearer x" is allowed.
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	match := 0
	for _, t := range a.tokens {
		match |= subtle.ConstantTimeCompare([]byte(got), t)
	}
	return match == 1
}

// check answers 401 and counts the failure unless r carries a token; it
// reports whether the request may go on.
func (a *bearerAuth) check(w http.ResponseWriter, r *http.Request) bool {
	if a.allows(r) {
		return true
	}
	if a.failures != nil {
		a.failures.record(a.area, r)
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="`+a.realm+`"`)
	writeError(w, http.StatusUnauthorized, "unauthorized", "send Authorization: Bearer followed by the "+a.area+" token")
	return false
}

// authFailures counts failed authentication attempts in
// hubsync_auth_failures_total{area} and logs them at a bounded rate: one line
// per interval at most, with the number of failures since the last line, so a
// brute-force attempt cannot flood the log.
type authFailures struct {
	counter  *prometheus.CounterVec
	log      *slog.Logger
	interval time.Duration
	now      func() time.Time

	mu         sync.Mutex
	lastLog    time.Time
	suppressed map[string]int // area -> failures not yet logged
}

func newAuthFailures(counter *prometheus.CounterVec, log *slog.Logger, interval time.Duration) *authFailures {
	return &authFailures{counter: counter, log: log, interval: interval, now: time.Now, suppressed: map[string]int{}}
}

func (f *authFailures) record(area string, r *http.Request) {
	f.counter.WithLabelValues(area).Inc()
	f.mu.Lock()
	f.suppressed[area]++
	now := f.now()
	if !f.lastLog.IsZero() && now.Sub(f.lastLog) < f.interval {
		f.mu.Unlock()
		return
	}
	f.lastLog = now
	counts := f.suppressed
	f.suppressed = map[string]int{}
	f.mu.Unlock()
	for a, n := range counts {
		f.log.Warn("hubsync: failed authentication", "area", a, "failures", n, "since", f.interval.String(),
			"last_remote", r.RemoteAddr, "last_path", logtext.URI(r.URL.Path))
	}
}

// apiGuard protects every /api/… route: a bearer token (401), and on write
// methods no foreign Origin (403), a JSON body (415) and a declared body no
// larger than maxBody (413, answered before the body is read, so a client
// sending `Expect: 100-continue` gets no `100 Continue`).
type apiGuard struct {
	auth *bearerAuth
	// publicOrigin is the scheme://host of Config.PublicURL, also accepted as
	// Origin; empty when not set.
	publicOrigin string
	maxBody      int64
}

func (g *apiGuard) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.auth.check(w, r) {
			return
		}
		if isWrite(r.Method) {
			if o := r.Header.Get("Origin"); o != "" && !g.sameOrigin(o, r) {
				writeError(w, http.StatusForbidden, "foreign_origin", "requests from another site's page are refused; call the API from a server, not a browser page of another origin")
				return
			}
			if r.Method != http.MethodDelete || r.ContentLength != 0 {
				if !isJSONContentType(r.Header.Get("Content-Type")) {
					writeError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json")
					return
				}
			}
			if g.maxBody > 0 && r.ContentLength > g.maxBody {
				writeError(w, http.StatusRequestEntityTooLarge, "too_large", "the body exceeds the limit of the API")
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether origin is the request's own (its Host, on either
// scheme) or the configured public URL's.
func (g *apiGuard) sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // "null" and anything unparsable are foreign
	}
	if g.publicOrigin != "" && strings.EqualFold(u.Scheme+"://"+u.Host, g.publicOrigin) {
		return true
	}
	return strings.EqualFold(u.Host, r.Host)
}

func isWrite(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

func isJSONContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}
