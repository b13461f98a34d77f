package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	hubsync "github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/store"
)

// Tokens of the tests' API and admin; TokenMinLength characters or more.
const (
	testAPIToken   = "test-api-token-0123456789"
	testAPIToken2  = "test-api-token-rotated-9876"
	testAdminToken = "test-admin-token-0123456789"
)

// apiPost is http.Post of a JSON body with the tests' API token.
func apiPost(url string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testAPIToken)
	return http.DefaultClient.Do(req)
}

// createContact creates a contact with email through the records API of the
// server at base, and fails t unless it was created.
func createContact(t *testing.T, base, email string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"fields": map[string]string{"email": email}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := apiPost(base+"/api/records/contacts", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create %s = %d", email, resp.StatusCode)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

type apiRequest struct {
	method, path, token, contentType, origin, body string
}

func (r apiRequest) do(t *testing.T, base string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(r.method, base+r.path, strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	if r.origin != "" {
		req.Header.Set("Origin", r.origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestAPIAuth is the table of the /api guard: token (any of several),
// JSON writes, foreign Origin; failures are counted and logged at a bounded
// rate.
func TestAPIAuth(t *testing.T) {
	db := dbtest.New(t, store.SQLite)
	var logs syncBuffer
	srv := startServer(t, Config{
		DatabaseURL: db.URL, APITokens: []string{testAPIToken, testAPIToken2}, AdminToken: testAdminToken,
		AuthFailureLogInterval: time.Hour, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	base := "http://" + srv.Addr()
	own := "http://" + srv.Addr()
	const create = `{"fields":{"email":"auth@example.com"}}`
	cases := []struct {
		name string
		req  apiRequest
		want int
	}{
		{"no header", apiRequest{"GET", "/api/records/contacts", "", "", "", ""}, 401},
		{"wrong token", apiRequest{"GET", "/api/records/contacts", "wrong-token-0123456789", "", "", ""}, 401},
		{"token prefix", apiRequest{"GET", "/api/records/contacts", testAPIToken[:20], "", "", ""}, 401},
		{"write without token", apiRequest{"POST", "/api/records/contacts", "", "application/json", "", create}, 401},
		{"unknown api route without token", apiRequest{"GET", "/api/nothing", "", "", "", ""}, 401},
		{"first token", apiRequest{"GET", "/api/records/contacts", testAPIToken, "", "", ""}, 200},
		{"second token", apiRequest{"GET", "/api/records/contacts", testAPIToken2, "", "", ""}, 200},
		{"text/plain write", apiRequest{"POST", "/api/records/contacts", testAPIToken, "text/plain", "", create}, 415},
		{"no content type", apiRequest{"POST", "/api/records/contacts", testAPIToken, "", "", create}, 415},
		{"form write", apiRequest{"POST", "/api/records/contacts", testAPIToken, "application/x-www-form-urlencoded", "", create}, 415},
		{"foreign origin", apiRequest{"POST", "/api/records/contacts", testAPIToken, "application/json", "http://evil.example", create}, 403},
		{"null origin", apiRequest{"POST", "/api/records/contacts", testAPIToken, "application/json", "null", create}, 403},
		{"foreign origin read", apiRequest{"GET", "/api/records/contacts", testAPIToken, "", "http://evil.example", ""}, 200},
		{"own origin", apiRequest{"POST", "/api/records/contacts", testAPIToken, "application/json; charset=utf-8", own, create}, 201},
		{"no origin", apiRequest{"POST", "/api/records/contacts", testAPIToken2, "application/json", "", `{"fields":{"email":"auth2@example.com"}}`}, 201},
	}
	failures := 0
	for _, tc := range cases {
		code, h, body := tc.req.do(t, base)
		if code != tc.want {
			t.Errorf("%s: %s %s = %d %s, want %d", tc.name, tc.req.method, tc.req.path, code, body, tc.want)
		}
		if code == 401 {
			failures++
			var e errorBody
			if json.Unmarshal([]byte(body), &e) != nil || e.Error != "unauthorized" || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s: 401 body %q, WWW-Authenticate %q: want a JSON error and a Bearer challenge", tc.name, body, h.Get("WWW-Authenticate"))
			}
		}
		if h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no X-Content-Type-Options: nosniff", tc.name)
		}
	}
	// A failed admin attempt is counted under its own area.
	if code, _, _ := (apiRequest{"GET", "/admin/metrics", "wrong-admin-token-0123", "", "", ""}).do(t, base); code != 401 {
		t.Fatalf("admin with a wrong token = %d, want 401", code)
	}
	_, metrics := get(t, base+"/metrics")
	for _, want := range []string{
		fmt.Sprintf(`%s{area="api"} %d`, MetricAuthFailures, failures),
		fmt.Sprintf(`%s{area="admin"} 1`, MetricAuthFailures),
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q:\n%s", want, grepLines(metrics, MetricAuthFailures))
		}
	}
	// Within one AuthFailureLogInterval, one log line, however many failures.
	if n := strings.Count(logs.String(), "failed authentication"); n != 1 {
		t.Errorf("%d log lines about failed authentication within one interval, want 1:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "wrong-token") {
		t.Errorf("the log shows a token that was tried:\n%s", logs.String())
	}
	// The scheme is case-insensitive; what follows it must be a token.
	for auth, want := range map[string]int{
		"bearer " + testAPIToken: 200, "BEARER " + testAPIToken: 200,
		"Bearer" + testAPIToken: 401, "Basic " + testAPIToken: 401, "bearer  " + testAPIToken: 401,
	} {
		req, _ := http.NewRequest("GET", base+"/api/records/contacts", nil)
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Authorization %.12q… = %d; want %d", auth, resp.StatusCode, want)
		}
	}
}

func TestAuthFailureLogIsBounded(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	in := newInstruments(nil, slog.New(slog.DiscardHandler), StatsTTLDefault)
	f := newAuthFailures(in.authFailures, slog.New(slog.NewTextHandler(&logs, nil)), 10*time.Second)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.now = func() time.Time { return now }
	r, _ := http.NewRequest("GET", "http://x/api/records/contacts", nil)
	for range 5 {
		f.record(authAreaAPI, r)
	}
	now = now.Add(10 * time.Second)
	f.record(authAreaAPI, r) // a new interval: one line for the 5 held back and this one
	out := logs.String()
	if n := strings.Count(out, "failed authentication"); n != 2 {
		t.Fatalf("%d lines, want 2 (the first failure, then one per interval):\n%s", n, out)
	}
	if !strings.Contains(out, "failures=5") {
		t.Errorf("the second line does not carry the count of failures since the first:\n%s", out)
	}
}

// TestAPIOffWithoutToken: without APITokens no /api route exists.
func TestAPIOffWithoutToken(t *testing.T) {
	db := dbtest.New(t, store.SQLite)
	srv := startServer(t, Config{DatabaseURL: db.URL})
	for _, r := range []apiRequest{
		{"GET", "/api/records/contacts", testAPIToken, "", "", ""},
		{"POST", "/api/records/contacts", testAPIToken, "application/json", "", `{"fields":{}}`},
		{"GET", "/api/records/contacts", "", "", "", ""},
	} {
		if code, _, body := r.do(t, "http://"+srv.Addr()); code != http.StatusNotFound {
			t.Errorf("%s %s without APITokens = %d %s, want 404", r.method, r.path, code, body)
		}
	}
}

func TestShortTokensRefused(t *testing.T) {
	t.Parallel()
	base := Config{DisableWebhooks: true, DisableSyncWorker: true, DisableOutboundWorker: true}
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"short api token", func(c *Config) { c.APITokens = []string{"short-token"} }, "APITokens"},
		{"second api token short", func(c *Config) { c.APITokens = []string{testAPIToken, "123456789012345"} }, "token 2 of 2"},
		{"short admin token", func(c *Config) { c.AdminToken = "admin" }, "AdminToken"},
	} {
		cfg := base
		tc.mutate(&cfg)
		_, err := New(cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "16") {
			t.Errorf("%s: New = %v, want ErrConfig naming %s and the minimum", tc.name, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "short-token") || strings.Contains(err.Error(), "123456789012345")) {
			t.Errorf("%s: the error shows the token: %v", tc.name, err)
		}
	}
	cfg := base
	cfg.APITokens, cfg.AdminToken = []string{testAPIToken, testAPIToken2}, testAdminToken
	if _, err := New(cfg); err != nil {
		t.Errorf("tokens of 16+ characters: %v", err)
	}
}

// TestUnsyncedFieldsAndUnmappedType: the records API answers 404 for an object
// type the mapping lacks, and lists the fields a record has that will not
// reach HubSpot.
func TestUnsyncedFieldsAndUnmappedType(t *testing.T) {
	db := dbtest.New(t, store.SQLite)
	m, err := mapping.NewSet(mapping.Object{
		ObjectType: "contacts", HubSpotType: "contacts", WebhookName: "contact", Version: 1,
		IDProperty: "email", IDField: "email",
		Fields: []mapping.Field{{Local: "email", HubSpot: "email"}, {Local: "first_name", HubSpot: "firstname"},
			{Local: "score", HubSpot: "hs_score", Direction: mapping.FromHubSpot}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, Config{DatabaseURL: db.URL, Mapping: m, APITokens: []string{testAPIToken}})
	base := "http://" + srv.Addr()
	if code, _, body := (apiRequest{"POST", "/api/records/deals", testAPIToken, "application/json", "", `{"fields":{"name":"x"}}`}).do(t, base); code != http.StatusNotFound {
		t.Errorf("create an unmapped type = %d %s, want 404", code, body)
	}
	code, _, body := (apiRequest{"POST", "/api/records/contacts", testAPIToken, "application/json", "",
		`{"fields":{"email":"u@example.com","firstname":"Typo","first_name":"Ann","score":3}}`}).do(t, base)
	if code != http.StatusCreated {
		t.Fatalf("create = %d %s", code, body)
	}
	var rec struct {
		ID       string   `json:"id"`
		Unsynced []string `json:"unsynced_fields"`
	}
	if err := json.Unmarshal([]byte(body), &rec); err != nil {
		t.Fatal(err)
	}
	if strings.Join(rec.Unsynced, ",") != "firstname,score" {
		t.Errorf("unsynced_fields = %q, want [firstname score]", rec.Unsynced)
	}
	_, _, body = (apiRequest{"GET", "/api/records/contacts/" + rec.ID, testAPIToken, "", "", ""}).do(t, base)
	if !strings.Contains(body, `"unsynced_fields":["firstname","score"]`) {
		t.Errorf("GET does not list the unsynced fields: %s", body)
	}
}

// rawRequest writes a request on a new connection and reads the first answer
// (a "100 Continue" included, if the server sends one).
func rawRequest(t *testing.T, addr, req string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(testwait.Deadline))
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	return resp
}

// TestExpectContinueOversized: a declared body over the limit answers 413 at
// once, without "100 Continue", on the webhook, records and admin routes.
func TestExpectContinueOversized(t *testing.T) {
	db := dbtest.New(t, store.SQLite)
	srv := startServer(t, Config{DatabaseURL: db.URL, APITokens: []string{testAPIToken}, AdminToken: testAdminToken})
	for _, r := range []struct{ path, token string }{
		{"/webhooks/hubspot", ""},
		{"/api/records/contacts", testAPIToken},
		{"/admin/deadletters/retry", testAdminToken},
	} {
		req := "POST " + r.path + " HTTP/1.1\r\nHost: " + srv.Addr() + "\r\nContent-Type: application/json\r\n" +
			"Authorization: Bearer " + r.token + "\r\nContent-Length: 50000000\r\nExpect: 100-continue\r\n\r\n"
		resp := rawRequest(t, srv.Addr(), req)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("POST %s with Expect: 100-continue and 50 MB declared: first answer %d, want 413", r.path, resp.StatusCode)
		}
	}
}

// waitClosed blocks until the server closes conn (a read ends with EOF or a
// reset), failing the test if it is still open at the wait deadline.
func waitClosed(t *testing.T, conn net.Conn, r io.Reader) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(testwait.Deadline))
	_, err := io.Copy(io.Discard, r)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatalf("the connection is still open after %s", testwait.Deadline)
	}
}

// TestSlowAndIdleConnectionsCut: a client that never finishes its headers
// (slowloris) and an idle keep-alive connection are closed by the server.
func TestSlowAndIdleConnectionsCut(t *testing.T) {
	db := dbtest.New(t, store.SQLite)
	srv := startServer(t, Config{DatabaseURL: db.URL, HTTP: HTTPConfig{
		ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: time.Second, IdleTimeout: 200 * time.Millisecond,
	}})

	slow, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := io.WriteString(slow, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, slow, slow)

	idle, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(idle)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Close {
		t.Fatalf("healthz = %d (close %v), want 200 on a kept-alive connection", resp.StatusCode, resp.Close)
	}
	waitClosed(t, idle, br)
}

func TestHTTPConfigDefaults(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, store.SQLite)
	srv := startServer(t, Config{DatabaseURL: db.URL})
	h := srv.http
	if h.ReadHeaderTimeout != ReadHeaderTimeoutDefault || h.ReadTimeout != ReadTimeoutDefault || h.WriteTimeout != WriteTimeoutDefault ||
		h.IdleTimeout != IdleTimeoutDefault || h.MaxHeaderBytes != MaxHeaderBytesDefault {
		t.Errorf("http.Server = %+v, want the HTTPConfig defaults", h)
	}
}

// TestRejectedWebhookURITruncatedInLog: a rejected webhook with a long query
// string costs a short log line.
func TestRejectedWebhookURITruncatedInLog(t *testing.T) {
	db := dbtest.New(t, store.SQLite)
	var logs syncBuffer
	srv := startServer(t, Config{DatabaseURL: db.URL, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	q := strings.Repeat("a", 30_000)
	resp, err := http.Post("http://"+srv.Addr()+"/webhooks/hubspot?q="+q, "application/json", strings.NewReader(`[]`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unsigned webhook = %d, want 401", resp.StatusCode)
	}
	testwait.For(t, "the rejection in the log", func() bool { return strings.Contains(logs.String(), "webhook rejected") })
	if n := len(logs.String()); n > 4000 || strings.Contains(logs.String(), strings.Repeat("a", 1000)) {
		t.Errorf("the log holds %d bytes for one rejected webhook with a 30 KB query string", n)
	}
}

// countingStore counts Stats calls.
type countingStore struct {
	store.Store
	mu    sync.Mutex
	stats int
}

func (s *countingStore) Stats(ctx context.Context) (store.Stats, error) {
	s.mu.Lock()
	s.stats++
	s.mu.Unlock()
	return s.Store.Stats(ctx)
}

func (s *countingStore) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// TestMetricsScrapeCachesStats: scrapes within StatsTTL share one Stats
// reading; the next one after it reads again.
func TestMetricsScrapeCachesStats(t *testing.T) {
	t.Parallel()
	db, err := hubsync.Open(context.Background(), dbtest.New(t, store.SQLite).URL, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := hubsync.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: db.Store}
	in := newInstruments(cs, slog.New(slog.DiscardHandler), time.Minute)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	in.stats.now = clock
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := in.reg.Gather(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := cs.calls(); n != 1 {
		t.Fatalf("8 scrapes within the TTL ran Stats %d times, want 1", n)
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	if _, err := in.reg.Gather(); err != nil {
		t.Fatal(err)
	}
	if n := cs.calls(); n != 2 {
		t.Fatalf("a scrape after the TTL: Stats ran %d times in all, want 2", n)
	}
}

func TestAPIGuardOrigin(t *testing.T) {
	t.Parallel()
	g := &apiGuard{publicOrigin: "https://crm.example.com"}
	r, _ := http.NewRequest("POST", "http://127.0.0.1:8080/api/records/contacts", nil)
	for origin, want := range map[string]bool{
		"http://127.0.0.1:8080":        true, // the request's own host
		"https://crm.example.com":      true, // the public URL
		"HTTPS://CRM.EXAMPLE.COM":      true,
		"http://crm.example.com":       false, // another scheme than the public URL's, another host than the request's
		"https://crm.example.com.evil": false,
		"http://127.0.0.1:9999":        false,
		"null":                         false,
		"file://":                      false,
	} {
		if got := g.sameOrigin(origin, r); got != want {
			t.Errorf("sameOrigin(%q) = %v, want %v", origin, got, want)
		}
	}
}
