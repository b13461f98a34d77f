package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/dispatch"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/qstash"
	"github.com/hubsync/hubsync/store"
)

const (
	testQStashToken = "qstash-test-token"
	testSigningKey  = "sig_test_current"
	testCronSecret  = "cron-secret-0123456789"
	testWorkerURL   = "https://worker.test/qstash/hubspot"
)

func TestDispatchConfigErrors(t *testing.T) {
	base := Config{DisableWebhooks: true, HubSpotAccessToken: "x"}
	cases := []struct {
		name string
		mod  func(*Config)
		want []string
	}{
		{"unknown mode", func(c *Config) { c.Dispatch = "push" }, []string{"Dispatch \"push\""}},
		{"qstash without settings", func(c *Config) { c.Dispatch = DispatchQStash },
			[]string{"QStashURL", "QStashToken", "QStashCurrentSigningKey", "WorkerURL"}},
		{"worker URL with query", func(c *Config) {
			c.Dispatch, c.QStashURL, c.QStashToken, c.QStashCurrentSigningKey = DispatchQStash, "http://q", "t", "k"
			c.WorkerURL = "https://w/qstash/hubspot?x=1"
		}, []string{"WorkerURL"}},
		{"qstash without the outbound worker", func(c *Config) {
			c.Dispatch, c.QStashURL, c.QStashToken, c.QStashCurrentSigningKey, c.WorkerURL = DispatchQStash, "http://q", "t", "k", testWorkerURL
			c.DisableOutboundWorker = true
		}, []string{"DisableOutboundWorker"}},
		{"flow control", func(c *Config) {
			c.FlowControlRate, c.FlowControlParallelism, c.FlowControlPeriod = -1, -1, 1500*time.Millisecond
		}, []string{"FlowControlRate", "FlowControlParallelism", "FlowControlPeriod"}},
		{"short cron secret", func(c *Config) { c.CronSecret = "short" }, []string{"CronSecret"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.mod(&cfg)
			_, err := New(cfg)
			if err == nil {
				t.Fatal("New accepted the configuration")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
	c := Config{BudgetKey: "hubspot:private-app:primary"}.WithDefaults()
	if c.FlowControlKey != "hubspot-private-app-primary" || c.FlowControlRate != 80 || c.FlowControlPeriod != 10*time.Second || c.FlowControlParallelism != 12 || c.Dispatch != DispatchPoll {
		t.Fatalf("defaults: %+v", c)
	}
	// The rate follows the budget: 80 % of RateLimit per 10 s, over the period.
	if c := (Config{RateLimit: 190, FlowControlPeriod: 20 * time.Second}).WithDefaults(); c.FlowControlRate != 304 {
		t.Fatalf("FlowControlRate for a budget of 190 per 10 s over 20 s = %d; want 304", c.FlowControlRate)
	}
	if c := (Config{RateLimit: 190, FlowControlRate: 150}).WithDefaults(); c.FlowControlRate != 150 {
		t.Fatalf("a set FlowControlRate became %d", c.FlowControlRate)
	}
}

func TestCronReconcileAuth(t *testing.T) {
	db := dbtest.New(t, store.SQLite)
	srv := startServer(t, Config{DatabaseURL: db.URL, CronSecret: testCronSecret, APITokens: []string{testAPIToken}})
	url := "http://" + srv.Addr() + CronReconcilePath
	method := http.MethodGet
	call := func(auth string) (int, string) {
		req, _ := http.NewRequest(method, url, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for name, auth := range map[string]string{"missing": "", "wrong": "Bearer not-the-secret-0123456", "api token": "Bearer " + testAPIToken, "not bearer": testCronSecret} {
		if code, _ := call(auth); code != http.StatusUnauthorized {
			t.Errorf("%s secret: %d, want 401", name, code)
		}
	}
	code, body := call("Bearer " + testCronSecret)
	var got map[string]int
	if code != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil || len(got) != 2 {
		t.Fatalf("right secret: %d %s", code, body)
	}
	if _, ok := got["checked"]; !ok {
		t.Fatalf("answer %s has no checked", body)
	}
	// Another method: the cron's own answers, not the records API's.
	method = http.MethodPost
	if code, body := call("Bearer " + testCronSecret); code != http.StatusMethodNotAllowed || !strings.Contains(body, "GET "+CronReconcilePath) {
		t.Fatalf("POST with the right secret: %d %s; want 405 naming GET", code, body)
	}
	if code, _ := call("Bearer " + testAPIToken); code != http.StatusUnauthorized {
		t.Fatalf("POST with the api token: %d; want 401", code)
	}
	// A HEAD probe (which the mux routes to a GET pattern) runs no sweep.
	method = http.MethodHead
	if code, _ := call("Bearer " + testCronSecret); code != http.StatusMethodNotAllowed {
		t.Fatalf("HEAD with the right secret: %d; want 405", code)
	}
	method = http.MethodGet

	db2 := dbtest.New(t, store.SQLite)
	off := startServer(t, Config{DatabaseURL: db2.URL, APITokens: []string{testAPIToken}})
	for _, auth := range []string{"", "Bearer " + testAPIToken} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+off.Addr()+CronReconcilePath, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("no CRON_SECRET, auth %q: %d, want 404", auth, resp.StatusCode)
		}
	}
}

// relayQStash is a stand-in for QStash in the server tests: each publish is
// signed and delivered at once to the server's worker endpoint.
type relayQStash struct {
	srv    *httptest.Server
	target func() string
	mu     sync.Mutex
	codes  []int
}

func newRelayQStash(t *testing.T) *relayQStash {
	q := &relayQStash{}
	q.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+testQStashToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		dest := strings.TrimPrefix(r.URL.Path, "/v2/publish/")
		now := time.Now()
		sig := qstash.Sign(testSigningKey, qstash.Claims{Issuer: qstash.Issuer, Subject: dest, IssuedAt: now.Unix(), NotBefore: now.Unix(),
			ExpiresAt: now.Add(5 * time.Minute).Unix(), Body: qstash.BodyHash(body)})
		json.NewEncoder(w).Encode(qstash.PublishResult{MessageID: "msg_" + r.Header.Get("Upstash-Deduplication-Id")})
		go func() {
			req, _ := http.NewRequest(http.MethodPost, q.target(), bytes.NewReader(body))
			req.Header.Set(qstash.SignatureHeader, sig)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			resp.Body.Close()
			q.mu.Lock()
			q.codes = append(q.codes, resp.StatusCode)
			q.mu.Unlock()
		}()
	}))
	t.Cleanup(q.srv.Close)
	return q
}

func TestQStashModeEndToEnd(t *testing.T) {
	q := newRelayQStash(t)
	db := dbtest.New(t, store.SQLite)
	srv := startServer(t, Config{DatabaseURL: db.URL, APITokens: []string{testAPIToken}, Dispatch: DispatchQStash,
		QStashURL: q.srv.URL, QStashToken: testQStashToken, QStashCurrentSigningKey: testSigningKey, WorkerURL: testWorkerURL})
	q.target = func() string { return "http://" + srv.Addr() + dispatch.WorkerPath }

	resp, err := apiPost("http://"+srv.Addr()+"/api/records/contacts", strings.NewReader(`{"fields":{"email":"q@example.com","first_name":"Q"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	st := srv.Store()
	testwait.For(t, "the outbound event to be processed through QStash", func() bool {
		s, err := st.Stats(context.Background())
		if err != nil {
			return false
		}
		for _, r := range s.Rows {
			if r.Direction == store.DirectionOutbound && r.Status == store.StatusProcessed && r.Count == 1 {
				return true
			}
		}
		return false
	})
	codes := func() string {
		q.mu.Lock()
		defer q.mu.Unlock()
		return fmt.Sprint(q.codes)
	}
	testwait.For(t, "QStash to get the delivery's answer", func() bool { return codes() != "[]" })
	if codes := codes(); codes != "[200]" {
		t.Fatalf("delivery answers %s, want [200]", codes)
	}
	_, metrics := get(t, "http://"+srv.Addr()+"/metrics")
	for _, want := range []string{MetricQStashPublished + " 1", MetricQStashDeliveries + `{code="200"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// The endpoint's authentication is the signature: an unsigned delivery is
	// refused, with or without an API token.
	for _, auth := range []string{"", "Bearer " + testAPIToken} {
		req, _ := http.NewRequest(http.MethodPost, q.target(), strings.NewReader(`{"eventId":"x"}`))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("unsigned delivery (auth %q): %d, want 401", auth, resp.StatusCode)
		}
	}
}

func TestPollModeHasNoWorkerEndpoint(t *testing.T) {
	db := dbtest.New(t, store.SQLite)
	srv := startServer(t, Config{DatabaseURL: db.URL})
	resp, err := http.Post("http://"+srv.Addr()+dispatch.WorkerPath, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("poll mode answers %d on the worker endpoint, want 404", resp.StatusCode)
	}
}

// TestWorkerURLWithAnotherPathIsWarned: a worker URL whose path is not the
// route QStash deliveries are served on starts (a proxy may rewrite it), with
// a warning naming the route; the route itself starts quietly.
func TestWorkerURLWithAnotherPathIsWarned(t *testing.T) {
	for path, warned := range map[string]bool{"/qstash": true, dispatch.WorkerPath: false} {
		q := newRelayQStash(t)
		db := dbtest.New(t, store.SQLite)
		var logs syncBuffer
		startServer(t, Config{DatabaseURL: db.URL, Dispatch: DispatchQStash, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			QStashURL: q.srv.URL, QStashToken: testQStashToken, QStashCurrentSigningKey: testSigningKey, WorkerURL: "https://worker.test" + path})
		if got := strings.Contains(logs.String(), "worker URL's path"); got != warned {
			t.Errorf("worker URL path %s: warned %v, want %v\n%s", path, got, warned, logs.String())
		}
	}
}
