package ui

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	hubsync "github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

const testToken = "admin-token-0123456789"

type uiBundle struct {
	st       store.Store
	ts       *httptest.Server
	ui       *UI
	failures *int
	now      *time.Time
}

func setupUI(t *testing.T, mutate ...func(*Config)) uiBundle {
	t.Helper()
	return setupUIOn(t, store.SQLite, mutate...)
}

// setupUIOn is setupUI on a database of dialect d.
func setupUIOn(t *testing.T, d store.Dialect, mutate ...func(*Config)) uiBundle {
	t.Helper()
	db := dbtest.Migrated(t, d)
	st, err := hubsync.NewStore(db.DB, d, store.Config{Retry: store.RetryPolicy{MaxAttempts: 1, NoJitter: true}})
	if err != nil {
		t.Fatal(err)
	}
	lk := links.New(st)
	recs, err := records.New(st, lk, records.Config{ObjectTypes: mapping.Default().ObjectTypes(), Mapping: mapping.Default()})
	if err != nil {
		t.Fatal(err)
	}
	failures := 0
	now := time.Now()
	cfg := Config{Token: testToken, Store: st, Records: recs, Links: lk,
		OnAuthFailure: func(*http.Request) { failures++ }, Now: func() time.Time { return now }}
	for _, m := range mutate {
		m(&cfg)
	}
	u, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	u.Register(mux)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return uiBundle{st: st, ts: ts, ui: u, failures: &failures, now: &now}
}

// client does not follow redirects, so tests see them.
func client(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type req struct {
	method, path, body, contentType, origin, csrf string
	cookie                                        *http.Cookie
	// streamed sends the body with no declared length (chunked).
	streamed bool
}

func (b uiBundle) do(t *testing.T, r req) (*http.Response, string) {
	t.Helper()
	var body io.Reader = strings.NewReader(r.body)
	if r.streamed {
		body = io.NopCloser(body) // neither a bytes nor a strings reader: sent chunked
	}
	hr, err := http.NewRequest(r.method, b.ts.URL+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.contentType != "" {
		hr.Header.Set("Content-Type", r.contentType)
	}
	if r.origin != "" {
		hr.Header.Set("Origin", r.origin)
	}
	if r.csrf != "" {
		hr.Header.Set("X-CSRF-Token", r.csrf)
	}
	if r.cookie != nil {
		hr.AddCookie(r.cookie)
	}
	resp, err := client(nil).Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, string(out)
}

func sessionCookie(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == SessionCookie {
			return c
		}
	}
	return nil
}

var csrfRE = regexp.MustCompile(`name="csrf-token" content="([^"]+)"`)

// signIn returns a session cookie and the CSRF token of the pages.
func (b uiBundle) signIn(t *testing.T) (*http.Cookie, string) {
	t.Helper()
	resp, body := b.do(t, req{method: "POST", path: "/admin/ui/login", body: "token=" + testToken, contentType: "application/x-www-form-urlencoded", origin: b.ts.URL})
	c := sessionCookie(resp)
	if resp.StatusCode != http.StatusSeeOther || c == nil {
		t.Fatalf("sign in = %d %s, cookie %v", resp.StatusCode, body, c)
	}
	_, page := b.do(t, req{method: "GET", path: "/admin/ui/", cookie: c})
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the page: %s", page)
	}
	return c, m[1]
}

func TestSignIn(t *testing.T) {
	b := setupUI(t)
	form := "application/x-www-form-urlencoded"

	// No session: pages go to the sign-in form, the API answers 401.
	resp, _ := b.do(t, req{method: "GET", path: "/admin/ui/"})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/admin/ui/login" {
		t.Fatalf("page without a session = %d to %q, want 303 to the sign-in form", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := b.do(t, req{method: "GET", path: "/admin/ui/api/overview"}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("API without a session = %d, want 401", resp.StatusCode)
	}

	// A wrong token is refused and counted; no cookie is set.
	resp, body := b.do(t, req{method: "POST", path: "/admin/ui/login", body: "token=wrong", contentType: form, origin: b.ts.URL})
	if resp.StatusCode != http.StatusUnauthorized || sessionCookie(resp) != nil || !strings.Contains(body, "not the admin token") || *b.failures != 1 {
		t.Fatalf("wrong token = %d, cookie %v, failures %d: %s", resp.StatusCode, sessionCookie(resp), *b.failures, body)
	}
	// A sign-in posted from another site's page is refused (login CSRF).
	if resp, _ := b.do(t, req{method: "POST", path: "/admin/ui/login", body: "token=" + testToken, contentType: form, origin: "https://evil.example"}); resp.StatusCode != http.StatusForbidden || sessionCookie(resp) != nil {
		t.Fatalf("foreign sign-in = %d, want 403 and no cookie", resp.StatusCode)
	}
	// Not a form, and an oversized form.
	if resp, _ := b.do(t, req{method: "POST", path: "/admin/ui/login", body: `{"token":"x"}`, contentType: "application/json"}); resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("JSON sign-in = %d, want 415", resp.StatusCode)
	}
	if resp, _ := b.do(t, req{method: "POST", path: "/admin/ui/login", body: "token=" + strings.Repeat("a", FormBodyMax+1), contentType: form}); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized sign-in = %d, want 413", resp.StatusCode)
	}

	// The right token: a session cookie with the flags, and the pages open.
	resp, _ = b.do(t, req{method: "POST", path: "/admin/ui/login", body: "token=" + testToken, contentType: form, origin: b.ts.URL})
	c := sessionCookie(resp)
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.Path != Path || c.MaxAge <= 0 {
		t.Fatalf("session cookie = %+v; want HttpOnly, SameSite=Strict, not Secure over plain http, Path %s", c, Path)
	}
	for _, p := range []string{"/admin/ui/", "/admin/ui/deadletters", "/admin/ui/record", "/admin/ui/api/overview"} {
		resp, body := b.do(t, req{method: "GET", path: p, cookie: c})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s with a session = %d %s", p, resp.StatusCode, body)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP = %q", p, csp)
		}
	}

	// The script and styles are served to anyone (the sign-in form uses
	// them), the templates are not.
	if resp, _ := b.do(t, req{method: "GET", path: "/admin/ui/static/app.js"}); resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("app.js = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if resp, _ := b.do(t, req{method: "GET", path: "/admin/ui/static/layout.html"}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a template = %d, want 404", resp.StatusCode)
	}

	// A tampered or expired cookie is no session.
	bad := *c
	bad.Value = c.Value[:len(c.Value)-2] + "xx"
	if resp, _ := b.do(t, req{method: "GET", path: "/admin/ui/api/overview", cookie: &bad}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("tampered cookie = %d, want 401", resp.StatusCode)
	}
	*b.now = b.now.Add(SessionTTLDefault + time.Second)
	if resp, _ := b.do(t, req{method: "GET", path: "/admin/ui/api/overview", cookie: c}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("expired cookie = %d, want 401", resp.StatusCode)
	}
}

func TestCookieSecureBehindTLSOrTrustedProxy(t *testing.T) {
	b := setupUI(t, func(c *Config) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
	login := func(r *http.Request) *http.Cookie {
		w := httptest.NewRecorder()
		b.ui.login(w, r)
		return sessionCookie(w.Result())
	}
	newReq := func(remote string) *http.Request {
		r := httptest.NewRequest("POST", "http://hubsync.internal/admin/ui/login", strings.NewReader("token="+testToken))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.RemoteAddr = remote
		return r
	}
	r := newReq("127.0.0.1:5000")
	r.Header.Set("X-Forwarded-Proto", "https")
	if c := login(r); c == nil || !c.Secure {
		t.Fatalf("behind a trusted https proxy: cookie %+v, want Secure", c)
	}
	r = newReq("203.0.113.9:5000")
	r.Header.Set("X-Forwarded-Proto", "https")
	if c := login(r); c == nil || c.Secure {
		t.Fatalf("X-Forwarded-Proto from an untrusted peer: cookie %+v, want not Secure", c)
	}
	r = newReq("203.0.113.9:5000")
	r.TLS = &tls.ConnectionState{}
	if c := login(r); c == nil || !c.Secure {
		t.Fatalf("over TLS: cookie %+v, want Secure", c)
	}
}

// TestCookieSecureWithHTTPSPublicURL: with an https public origin the
// session cookie is Secure even when the proxy in front says nothing, so a
// browser sent to the plain http address does not carry the session there.
func TestCookieSecureWithHTTPSPublicURL(t *testing.T) {
	for origin, want := range map[string]bool{"https://crm.example.com": true, "HTTPS://crm.example.com": true, "http://crm.example.com": false, "": false} {
		b := setupUI(t, func(c *Config) { c.PublicOrigin = origin })
		r := httptest.NewRequest("POST", "http://hubsync.internal/admin/ui/login", strings.NewReader("token="+testToken))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		b.ui.login(w, r)
		if c := sessionCookie(w.Result()); c == nil || c.Secure != want {
			t.Errorf("public origin %q, plain http from the proxy: cookie %+v, want Secure %v", origin, c, want)
		}
	}
}

func TestActionsNeedCSRFAndSameOrigin(t *testing.T) {
	b := setupUI(t)
	c, csrf := b.signIn(t)
	body := `{"direction":"outbound","ids":["x"]}`
	for name, r := range map[string]req{
		"no CSRF token":    {cookie: c},
		"wrong CSRF token": {cookie: c, csrf: strings.Repeat("A", len(csrf))},
		"another session's token": {cookie: c, csrf: func() string {
			_, other := b.signIn(t)
			return other
		}()},
		"foreign origin": {cookie: c, csrf: csrf, origin: "https://evil.example"},
		"null origin":    {cookie: c, csrf: csrf, origin: "null"},
	} {
		r.method, r.path, r.body, r.contentType = "POST", "/admin/ui/api/deadletters/retry", body, "application/json"
		if resp, out := b.do(t, r); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", name, resp.StatusCode, out)
		}
	}
	if resp, _ := b.do(t, req{method: "POST", path: "/admin/ui/api/deadletters/retry", body: body, contentType: "application/json", csrf: csrf}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no session: %d, want 401", resp.StatusCode)
	}
	if resp, out := b.do(t, req{method: "POST", path: "/admin/ui/api/deadletters/retry", body: body, contentType: "application/json", csrf: csrf, cookie: c, origin: b.ts.URL}); resp.StatusCode != http.StatusOK {
		t.Errorf("with session, token and own origin: %d %s, want 200", resp.StatusCode, out)
	}

	// Sign-out is a form with the token; without it the session stays.
	form := "application/x-www-form-urlencoded"
	if resp, _ := b.do(t, req{method: "POST", path: "/admin/ui/logout", body: "csrf=wrong", contentType: form, cookie: c}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-out with a wrong token: %d, want 403", resp.StatusCode)
	}
	resp, _ := b.do(t, req{method: "POST", path: "/admin/ui/logout", body: "csrf=" + url.QueryEscape(csrf), contentType: form, cookie: c, origin: b.ts.URL})
	if out := sessionCookie(resp); resp.StatusCode != http.StatusSeeOther || out == nil || out.MaxAge >= 0 || out.Value != "" {
		t.Errorf("sign-out = %d, cookie %+v; want 303 and the cookie cleared", resp.StatusCode, out)
	}
}

func (b uiBundle) deadOutbound(t *testing.T, n int) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for i := range n {
		p, _ := outbox.Snapshot{ID: "r" + string(rune('a'+i)), Fields: map[string]any{"email": "a@example.com", "unmapped": 1}}.Marshal()
		res, err := b.st.Outbound().Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: "r" + string(rune('a'+i)), EventType: store.EventUpdate, Payload: p})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	evs, err := b.st.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: n})
	if err != nil || len(evs) != n {
		t.Fatalf("claim: %d, %v", len(evs), err)
	}
	for _, e := range evs {
		if err := b.st.Outbound().Fail(ctx, e.Lease(), "boom"); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

func TestBadInput(t *testing.T) {
	b := setupUI(t)
	c, csrf := b.signIn(t)
	ids := b.deadOutbound(t, 1)
	get := func(path string) (int, string) {
		resp, out := b.do(t, req{method: "GET", path: path, cookie: c})
		return resp.StatusCode, out
	}
	post := func(path, ct, body string) (int, string) {
		resp, out := b.do(t, req{method: "POST", path: path, cookie: c, csrf: csrf, contentType: ct, body: body})
		return resp.StatusCode, out
	}
	for _, tc := range []struct {
		name   string
		code   int
		status func() (int, string)
	}{
		{"dead letters without a direction", 400, func() (int, string) { return get("/admin/ui/api/deadletters") }},
		{"unknown direction", 400, func() (int, string) { return get("/admin/ui/api/deadletters?direction=sideways") }},
		{"control character in a filter", 400, func() (int, string) { return get("/admin/ui/api/deadletters?direction=outbound&error=%00") }},
		{"oversized filter", 400, func() (int, string) {
			return get("/admin/ui/api/deadletters?direction=outbound&object_type=" + strings.Repeat("a", 101))
		}},
		{"bad limit", 400, func() (int, string) { return get("/admin/ui/api/deadletters?direction=outbound&limit=-1") }},
		{"unknown object type", 400, func() (int, string) { return get("/admin/ui/api/record?type=nope&id=1") }},
		{"record without an id", 400, func() (int, string) { return get("/admin/ui/api/record?type=contacts") }},
		{"record with both ids", 400, func() (int, string) { return get("/admin/ui/api/record?type=contacts&id=1&hubspot_id=2") }},
		{"oversized record id", 400, func() (int, string) { return get("/admin/ui/api/record?type=contacts&id=" + strings.Repeat("1", 256)) }},
		{"record id with a newline", 400, func() (int, string) { return get("/admin/ui/api/record?type=contacts&id=a%0Ab") }},
		{"unlinked HubSpot id", 404, func() (int, string) { return get("/admin/ui/api/record?type=contacts&hubspot_id=999") }},
		{"retry: malformed JSON", 400, func() (int, string) {
			return post("/admin/ui/api/deadletters/retry", "application/json", `{"direction":`)
		}},
		{"retry: unknown field", 400, func() (int, string) {
			return post("/admin/ui/api/deadletters/retry", "application/json", `{"direction":"outbound","ids":["x"],"drop":true}`)
		}},
		{"retry: trailing data", 400, func() (int, string) {
			return post("/admin/ui/api/deadletters/retry", "application/json", `{"direction":"outbound","ids":["x"]} {}`)
		}},
		{"retry: not JSON", 415, func() (int, string) {
			return post("/admin/ui/api/deadletters/retry", "text/plain", `direction=outbound`)
		}},
		{"retry: oversized", 413, func() (int, string) {
			return post("/admin/ui/api/deadletters/retry", "application/json", `{"direction":"outbound","ids":["`+strings.Repeat("a", JSONBodyMax)+`"]}`)
		}},
		{"retry: oversized, streamed", 413, func() (int, string) {
			resp, out := b.do(t, req{method: "POST", path: "/admin/ui/api/deadletters/retry", cookie: c, csrf: csrf, contentType: "application/json", streamed: true,
				body: `{"direction":"outbound","ids":["` + strings.Repeat("a", JSONBodyMax) + `"]}`})
			return resp.StatusCode, out
		}},
		{"retry: ids and all", 400, func() (int, string) {
			return post("/admin/ui/api/deadletters/retry", "application/json", `{"direction":"outbound","ids":["x"],"all":true}`)
		}},
		{"retry: malformed id", 400, func() (int, string) {
			return post("/admin/ui/api/deadletters/retry", "application/json", `{"direction":"outbound","ids":["a\u0000b"]}`)
		}},
		{"retry: nothing selected", 400, func() (int, string) {
			return post("/admin/ui/api/deadletters/retry", "application/json", `{"direction":"outbound"}`)
		}},
		{"discard: no reason", 400, func() (int, string) {
			return post("/admin/ui/api/deadletters/discard", "application/json", `{"direction":"outbound","ids":["`+ids[0]+`"],"reason":" "}`)
		}},
		{"HubSpot read without a client", 503, func() (int, string) { return post("/admin/ui/api/record/hubspot?type=contacts&id=1", "", "") }},
	} {
		if code, out := tc.status(); code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, code, out, tc.code)
		} else if !strings.Contains(out, `"error"`) {
			t.Errorf("%s: answer %s has no error code", tc.name, out)
		}
	}
	// Nothing was lost to the bad requests.
	if dls, _ := ops.ListDeadLetters(context.Background(), b.st, ops.DeadLetterQuery{Direction: store.DirectionOutbound}); len(dls) != 1 {
		t.Fatalf("dead letters after bad requests: %d, want 1", len(dls))
	}
}

func TestDeadLettersAPI(t *testing.T) {
	b := setupUI(t)
	c, csrf := b.signIn(t)
	ids := b.deadOutbound(t, 2)
	resp, out := b.do(t, req{method: "GET", path: "/admin/ui/api/deadletters?direction=outbound&object_type=contacts&error=BOO", cookie: c})
	var page deadLettersResponse
	if err := json.Unmarshal([]byte(out), &page); err != nil || resp.StatusCode != 200 || len(page.DeadLetters) != 2 {
		t.Fatalf("list = %d %s (%v)", resp.StatusCode, out, err)
	}
	ws := page.DeadLetters[0].WouldSend
	if ws == nil || ws.Action != "upsert" || ws.HubSpotType != "contacts" || ws.Properties["email"] != "a@example.com" || len(ws.Properties) != 1 {
		t.Fatalf("would send = %+v; want an upsert of the mapped email only", ws)
	}
	resp, out = b.do(t, req{method: "POST", path: "/admin/ui/api/deadletters/discard", cookie: c, csrf: csrf, contentType: "application/json",
		body: `{"direction":"outbound","ids":["` + ids[0] + `"],"reason":"test record"}`})
	if resp.StatusCode != 200 || !strings.Contains(out, `"discarded":1`) {
		t.Fatalf("discard = %d %s", resp.StatusCode, out)
	}
	if resp, out = b.do(t, req{method: "GET", path: "/admin/ui/api/discarded", cookie: c}); resp.StatusCode != 200 || !strings.Contains(out, `"reason":"test record"`) || !strings.Contains(out, ids[0]) {
		t.Fatalf("discarded = %d %s; want %s with its reason", resp.StatusCode, out, ids[0])
	}
	resp, out = b.do(t, req{method: "POST", path: "/admin/ui/api/deadletters/retry", cookie: c, csrf: csrf, contentType: "application/json",
		body: `{"direction":"outbound","all":true,"object_type":"contacts"}`})
	if resp.StatusCode != 200 || !strings.Contains(out, `"requeued":1`) {
		t.Fatalf("retry all = %d %s", resp.StatusCode, out)
	}
}

func TestActivity(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 30, 0, time.UTC)
	a := NewActivity(func() time.Time { return now })
	a.Add(SeriesHubSpotCalls, 2)
	now = now.Add(time.Minute)
	a.Add(SeriesHubSpotCalls, 3)
	s := a.Snapshot(SeriesHubSpot429)
	calls := s.Series[SeriesHubSpotCalls]
	if len(calls) != ActivityMinutes || calls[ActivityMinutes-1] != 3 || calls[ActivityMinutes-2] != 2 || len(s.Series[SeriesHubSpot429]) != ActivityMinutes {
		t.Fatalf("snapshot = %+v", s)
	}
	// An hour later the old minutes are gone, even though their slots are reused.
	now = now.Add(ActivityMinutes * time.Minute)
	a.Add(SeriesHubSpotCalls, 1)
	calls = a.Snapshot().Series[SeriesHubSpotCalls]
	var total int64
	for _, v := range calls {
		total += v
	}
	if total != 1 || calls[ActivityMinutes-1] != 1 {
		t.Fatalf("an hour later: %v, want only the new call", calls)
	}
}

func FuzzSessionCheck(f *testing.F) {
	s := newSessions(testToken, time.Hour, time.Now)
	// A session of another key (another admin token) has the right shape.
	other, _ := newSessions("another-admin-token-0123", time.Hour, time.Now).issue()
	f.Add(other)
	f.Add("")
	f.Add(".")
	f.Add(strings.Repeat("A", 300))
	f.Add(other[:len(other)-1])
	f.Fuzz(func(t *testing.T, v string) {
		// Only a value this key signed can pass, which no input made
		// without the key can be.
		if id, err := s.check(v); err == nil {
			t.Fatalf("check(%q) accepted a session this key never issued (id %x)", v, id)
		}
	})
}

func FuzzRetryBody(f *testing.F) {
	f.Add(`{"direction":"outbound","ids":["x"]}`)
	f.Add(`{"direction":"outbound","all":true,"key":"hubspot"}`)
	f.Add(`{`)
	f.Add(`{"direction":"outbound","ids":[1]}`)
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		var req retryRequest
		err := decodeJSON(httptest.NewRecorder(), r, &req)
		if err == nil && !json.Valid([]byte(strings.TrimSpace(body))) {
			t.Fatalf("decodeJSON accepted invalid JSON %q", body)
		}
	})
}

// TestRecordPageTrailingSpace: MariaDB compares "ra " and "ra" as equal; the
// record page of an id with a trailing space is 404 on every database, not
// the events of another record.
func TestRecordPageTrailingSpace(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setupUIOn(t, d)
		c, _ := b.signIn(t)
		b.deadOutbound(t, 1) // an outbound dead letter of record "ra"
		for _, q := range []string{"id=ra%20", "hubspot_id=7%20"} {
			if resp, out := b.do(t, req{method: "GET", path: "/admin/ui/api/record?type=contacts&" + q, cookie: c}); resp.StatusCode != http.StatusNotFound {
				t.Errorf("record page of %s = %d %.200s; want 404", q, resp.StatusCode, out)
			}
		}
	})
}
