package ui

import (
	"cmp"
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// Path is where the dashboard is mounted.
const Path = "/admin/ui"

// Defaults and limits.
const (
	// SessionTTLDefault is how long a sign-in lasts.
	SessionTTLDefault = 12 * time.Hour
	// FormBodyMax bounds the sign-in and sign-out forms.
	FormBodyMax = 4 << 10
	// JSONBodyMax bounds the body of a dashboard action.
	JSONBodyMax = 256 << 10
	// KeyDefault is the Source and Destination the record page reads events of.
	KeyDefault = "hubspot"
)

//go:embed assets
var assetsFS embed.FS

// Config configures the dashboard. Token and Store are required.
type Config struct {
	// Token is the admin token the sign-in form asks for.
	Token string
	Store store.Store
	// Records and Links serve the record page; without Records it says the
	// records service is off.
	Records *records.Service
	Links   *links.Links
	Mapping *mapping.Set
	// HubSpot and Budget read HubSpot's side of a record on demand, one call
	// reserved from BudgetKey first; nil HubSpot: the page says it is not
	// configured.
	HubSpot   *hubspot.Client
	Budget    budget.Budget
	BudgetKey string
	// Metrics reads the queue figures of the overview; default
	// ops.LoadMetrics on Store. The server passes its cached reading (the one
	// behind /metrics), so open dashboards add no load on the database.
	Metrics func(ctx context.Context) (ops.Metrics, error)
	// BudgetUse reads the shared budget's window for the overview; nil shows none.
	BudgetUse func(ctx context.Context, key string) (budget.WindowUse, error)
	// Activity is this process's last hour, for the charts.
	Activity *Activity
	// TrustedProxies are the peers whose X-Forwarded-Proto https makes the
	// session cookie Secure.
	TrustedProxies []netip.Prefix
	// PublicOrigin (scheme://host) is accepted as Origin besides the request's
	// own Host. When it is https, the session cookie is always Secure: the
	// dashboard is then reached through a TLS proxy, which need not say so
	// (X-Forwarded-Proto from TrustedProxies), and a browser led to the plain
	// http address must not send the session there.
	PublicOrigin string
	// OnAuthFailure is called for each refused sign-in or session (a counter).
	OnAuthFailure func(r *http.Request)
	// SessionTTL defaults to SessionTTLDefault.
	SessionTTL time.Duration
	Logger     *slog.Logger
	Now        func() time.Time
}

// UI is the dashboard's handler set.
type UI struct {
	cfg   Config
	sess  *sessions
	pages *template.Template
	log   *slog.Logger
}

// New checks cfg and returns the dashboard.
func New(cfg Config) (*UI, error) {
	if cfg.Token == "" || cfg.Store == nil {
		return nil, errors.New("ui: the dashboard needs the admin token and the store")
	}
	cfg.SessionTTL = cmp.Or(cfg.SessionTTL, SessionTTLDefault)
	cfg.BudgetKey = cmp.Or(cfg.BudgetKey, "hubspot")
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Mapping == nil {
		cfg.Mapping = mapping.Default()
	}
	if cfg.Metrics == nil {
		st := cfg.Store
		cfg.Metrics = func(ctx context.Context) (ops.Metrics, error) { return ops.LoadMetrics(ctx, st) }
	}
	if cfg.Activity == nil {
		cfg.Activity = NewActivity(cfg.Now)
	}
	pages, err := template.ParseFS(assetsFS, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("ui: templates: %w", err)
	}
	return &UI{cfg: cfg, sess: newSessions(cfg.Token, cfg.SessionTTL, cfg.Now), pages: pages, log: cfg.Logger}, nil
}

// Register mounts the dashboard on mux under Path.
func (u *UI) Register(mux *http.ServeMux) {
	static, _ := fs.Sub(assetsFS, "assets")
	files := http.StripPrefix(Path+"/static/", http.FileServerFS(static))
	// Only the script and the style sheet; the page templates are not served raw.
	mux.Handle("GET "+Path+"/static/{file}", u.headers(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("file") {
		case "app.js", "app.css":
			files.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})))
	mux.Handle("GET "+Path+"/login", u.headers(http.HandlerFunc(u.loginForm)))
	mux.Handle("POST "+Path+"/login", u.headers(http.HandlerFunc(u.login)))
	mux.Handle("POST "+Path+"/logout", u.headers(u.session(true, u.logout)))
	mux.Handle("GET "+Path, http.RedirectHandler(Path+"/", http.StatusSeeOther))
	mux.Handle("GET "+Path+"/{$}", u.headers(u.session(false, u.page("overview"))))
	mux.Handle("GET "+Path+"/deadletters", u.headers(u.session(false, u.page("deadletters"))))
	mux.Handle("GET "+Path+"/record", u.headers(u.session(false, u.page("record"))))

	api := func(method, path string, write bool, h func(w http.ResponseWriter, r *http.Request) error) {
		mux.Handle(method+" "+Path+"/api/"+path, u.headers(u.session(write, u.json(h))))
	}
	api("GET", "overview", false, u.overview)
	api("GET", "deadletters", false, u.deadLetters)
	api("POST", "deadletters/retry", true, u.retry)
	api("POST", "deadletters/discard", true, u.discard)
	api("GET", "discarded", false, u.discarded)
	api("GET", "record", false, u.record)
	api("POST", "record/hubspot", true, u.recordHubSpot)
}

// headers sets the dashboard's security headers: nothing from another
// origin, no framing, no caching of operator data.
func (u *UI) headers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

type ctxKey struct{}

// sessionOf returns the session id session put in r's context.
func sessionOf(r *http.Request) []byte {
	id, _ := r.Context().Value(ctxKey{}).([]byte)
	return id
}

// session lets a request through with a valid session; a write also needs
// the CSRF token (X-CSRF-Token header, or the csrf form field of a form) and
// no foreign Origin. A page without a session is sent to the sign-in form;
// anything else answers 401 or 403.
func (u *UI) session(write bool, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := u.cookieSession(r)
		if err != nil {
			if u.cfg.OnAuthFailure != nil && hasCookie(r) {
				u.cfg.OnAuthFailure(r)
			}
			if !write && !strings.HasPrefix(r.URL.Path, Path+"/api/") {
				http.Redirect(w, r, Path+"/login", http.StatusSeeOther)
				return
			}
			writeError(w, http.StatusUnauthorized, "unauthorized", "sign in at "+Path+"/login")
			return
		}
		if write {
			if !u.sameOrigin(r) {
				writeError(w, http.StatusForbidden, "foreign_origin", "requests from another site's page are refused")
				return
			}
			tok := r.Header.Get("X-CSRF-Token")
			if tok == "" && isForm(r) {
				r.Body = http.MaxBytesReader(w, r.Body, FormBodyMax)
				if err := r.ParseForm(); err != nil {
					writeError(w, http.StatusRequestEntityTooLarge, "bad_form", "the form is malformed or too large")
					return
				}
				tok = r.PostForm.Get("csrf")
			}
			if !u.sess.checkCSRF(id, tok) {
				writeError(w, http.StatusForbidden, "csrf", "the CSRF token is missing or wrong; reload the page")
				return
			}
		}
		h(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, id)))
	})
}

func hasCookie(r *http.Request) bool {
	_, err := r.Cookie(SessionCookie)
	return err == nil
}

func (u *UI) cookieSession(r *http.Request) ([]byte, error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return nil, errBadSession
	}
	return u.sess.check(c.Value)
}

func isForm(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return strings.HasPrefix(ct, "application/x-www-form-urlencoded")
}

// sameOrigin reports whether the request's Origin (or, without one, its
// Referer) is this server's own or the public URL's; a request with neither
// (not a browser) passes, as the CSRF token still guards it.
func (u *UI) sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		ref := r.Header.Get("Referer")
		if ref == "" {
			return true
		}
		o = ref
	}
	p, err := url.Parse(o)
	if err != nil || p.Host == "" || (p.Scheme != "http" && p.Scheme != "https") {
		return false
	}
	if u.cfg.PublicOrigin != "" && strings.EqualFold(p.Scheme+"://"+p.Host, u.cfg.PublicOrigin) {
		return true
	}
	return strings.EqualFold(p.Host, r.Host)
}

func (u *UI) setCookie(w http.ResponseWriter, r *http.Request, value string, exp time.Time, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: value, Path: Path, Expires: exp, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: secureRequest(r, u.cfg.TrustedProxies) || strings.HasPrefix(strings.ToLower(u.cfg.PublicOrigin), "https://"),
	})
}

type loginData struct {
	Error string
}

func (u *UI) loginForm(w http.ResponseWriter, r *http.Request) {
	if _, err := u.cookieSession(r); err == nil {
		http.Redirect(w, r, Path+"/", http.StatusSeeOther)
		return
	}
	u.render(w, http.StatusOK, "login.html", loginData{})
}

// login exchanges the admin token for a session cookie.
func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	if !u.sameOrigin(r) {
		u.render(w, http.StatusForbidden, "login.html", loginData{Error: "Sign in from this server's own page."})
		return
	}
	if !isForm(r) {
		u.render(w, http.StatusUnsupportedMediaType, "login.html", loginData{Error: "Send the sign-in form."})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, FormBodyMax)
	if err := r.ParseForm(); err != nil {
		u.render(w, http.StatusRequestEntityTooLarge, "login.html", loginData{Error: "The form is malformed or too large."})
		return
	}
	tok := r.PostForm.Get("token")
	if subtle.ConstantTimeCompare([]byte(tok), []byte(u.cfg.Token)) != 1 {
		if u.cfg.OnAuthFailure != nil {
			u.cfg.OnAuthFailure(r)
		}
		u.render(w, http.StatusUnauthorized, "login.html", loginData{Error: "That is not the admin token."})
		return
	}
	v, exp := u.sess.issue()
	u.setCookie(w, r, v, exp, int(u.cfg.SessionTTL/time.Second))
	u.log.Info("ui: signed in", "remote", r.RemoteAddr)
	http.Redirect(w, r, Path+"/", http.StatusSeeOther)
}

// logout clears the session cookie. The session is signed, not stored: a
// copy of the cookie taken before would stay valid until it expires, which
// SessionTTL bounds.
func (u *UI) logout(w http.ResponseWriter, r *http.Request) {
	u.setCookie(w, r, "", time.Unix(0, 0), -1)
	http.Redirect(w, r, Path+"/login", http.StatusSeeOther)
}

type pageData struct {
	Page string
	CSRF string
	Base string
	// ObjectTypes are the mapped object types, for the record page.
	ObjectTypes []string
}

func (u *UI) page(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u.render(w, http.StatusOK, name+".html", pageData{Page: name, CSRF: u.sess.csrf(sessionOf(r)), Base: Path, ObjectTypes: u.cfg.Mapping.ObjectTypes()})
	}
}

func (u *UI) render(w http.ResponseWriter, status int, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := u.pages.ExecuteTemplate(w, name, data); err != nil {
		u.log.Warn("ui: render", "page", name, "err", err)
	}
}
