package hubspotsim

import (
	"context"
	"errors"
	"github.com/hubsync/hubsync/internal/testwait"
	"net/http"
	"testing"
	"time"
)

func TestTenSecondRollingLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TenSecondLimit: 5})
	for i := range 5 {
		a := b.do("GET", "/crm/v3/objects/contacts", nil)
		wantStatus(t, a, http.StatusOK)
		if got, want := a.header.Get("X-HubSpot-RateLimit-Remaining"), string(rune('0'+4-i)); got != want {
			t.Fatalf("request %d Remaining = %s, want %s", i, got, want)
		}
		if a.header.Get("X-HubSpot-RateLimit-Max") != "5" || a.header.Get("X-HubSpot-RateLimit-Interval-Milliseconds") != "10000" {
			t.Fatalf("headers = %v", a.header)
		}
		b.clock.Advance(time.Second)
	}
	a := b.do("GET", "/crm/v3/objects/contacts", nil)
	wantStatus(t, a, http.StatusTooManyRequests)
	m := a.json(t)
	if m["status"] != "error" || m["errorType"] != "RATE_LIMIT" || m["policyName"] != "TEN_SECONDLY_ROLLING" ||
		m["message"] != "You have reached your ten_secondly_rolling limit." || m["groupName"] == nil || m["correlationId"] == nil {
		t.Fatalf("429 body = %s", a.body)
	}
	if a.header.Get("Retry-After") != "" || a.header.Get("X-HubSpot-RateLimit-Remaining") != "0" || a.header.Get("X-HubSpot-RateLimit-Daily") == "" {
		t.Fatalf("429 headers = %v", a.header)
	}
	// 429s do not consume the window: rolling past the first request frees one slot.
	b.clock.Advance(5 * time.Second) // first request is now exactly 10 s old
	wantStatus(t, b.do("GET", "/crm/v3/objects/contacts", nil), http.StatusOK)
	wantStatus(t, b.do("GET", "/crm/v3/objects/contacts", nil), http.StatusTooManyRequests)
	b.clock.Advance(10 * time.Second)
	for range 5 {
		wantStatus(t, b.do("GET", "/crm/v3/objects/contacts", nil), http.StatusOK)
	}
	c := b.srv.Counters()
	if c.RateLimited429["TEN_SECONDLY_ROLLING"] != 2 || c.Requests != 13 {
		t.Fatalf("counters = %+v", c)
	}
	// Control paths are never limited.
	resp, err := b.client.Get(b.srv.URL() + "/_sim/counters")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("control path status %d", resp.StatusCode)
	}
}

func TestDailyLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{DailyLimit: 3})
	for range 3 {
		wantStatus(t, b.do("GET", "/crm/v3/objects/deals", nil), http.StatusOK)
	}
	a := b.do("GET", "/crm/v3/objects/deals", nil)
	wantStatus(t, a, http.StatusTooManyRequests)
	if m := a.json(t); m["policyName"] != "DAILY" || m["errorType"] != "RATE_LIMIT" {
		t.Fatalf("daily 429 = %s", a.body)
	}
	if a.header.Get("X-HubSpot-RateLimit-Daily-Remaining") != "0" {
		t.Fatalf("headers = %v", a.header)
	}
	b.clock.Advance(24 * time.Hour)
	wantStatus(t, b.do("GET", "/crm/v3/objects/deals", nil), http.StatusOK)
	b.srv.SetLimits(0, 100)
	if b.srv.Counters().RateLimited429["DAILY"] != 1 {
		t.Fatal("DAILY 429 not counted")
	}
}

func TestSearchSecondlyLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TenSecondLimit: 3})
	for range 5 {
		wantStatus(t, b.do("POST", "/crm/v3/objects/contacts/search", map[string]any{}), http.StatusOK)
	}
	a := b.do("POST", "/crm/v3/objects/contacts/search", map[string]any{})
	wantStatus(t, a, http.StatusTooManyRequests)
	if m := a.json(t); m["policyName"] != "SECONDLY" {
		t.Fatalf("search 429 = %s", a.body)
	}
	if a.header.Get("X-HubSpot-RateLimit-Max") != "" {
		t.Fatal("search 429 carries rate-limit headers")
	}
	// Search does not use the ten-second window.
	wantStatus(t, b.do("GET", "/crm/v3/objects/contacts", nil), http.StatusOK)
	b.clock.Advance(time.Second)
	wantStatus(t, b.do("POST", "/crm/v3/objects/contacts/search", map[string]any{}), http.StatusOK)
}

func TestErrorFaults(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	for _, tc := range []struct {
		f      Faults
		status int
		kind   string
	}{
		{Faults{Error500: 1}, 500, "error500"},
		{Faults{Error502: 1}, 502, "error502"},
		{Faults{Error503: 1}, 503, "error503"},
		{Faults{Error423: 1}, 423, "error423"},
		{Faults{Error429: 1}, 429, "error429"},
	} {
		if err := b.srv.SetFaults(tc.f); err != nil {
			t.Fatal(err)
		}
		a := b.do("POST", "/crm/v3/objects/contacts", props("firstname", "x"))
		wantStatus(t, a, tc.status)
		if a.header.Get("X-HubSpot-RateLimit-Max") == "" {
			t.Errorf("%d answer lacks rate-limit headers", tc.status)
		}
		if got := b.srv.Counters().FaultsInjected[tc.kind]; got != 1 {
			t.Fatalf("FaultsInjected[%s] = %d", tc.kind, got)
		}
	}
	if len(b.srv.Objects("contacts")) != 0 {
		t.Fatal("a request answered by an injected error must not be applied")
	}
	if err := b.srv.SetFaults(Faults{Error500: 0.7, Error503: 0.7}); err == nil {
		t.Fatal("error probabilities summing over 1 accepted")
	}

	b.srv.SetFaults(Faults{DropProbability: 1})
	for range 4 {
		if _, err := b.try(AccessTokenDefault, "POST", "/crm/v3/objects/contacts", props("firstname", "x")); err == nil {
			t.Fatal("dropped request got an answer")
		}
	}
	if got := b.srv.Counters().FaultsInjected["drop"]; got < 4 {
		t.Fatalf("drops counted = %d", got)
	}
	b.srv.SetFaults(Faults{})
	wantStatus(t, b.do("GET", "/crm/v3/objects/contacts", nil), http.StatusOK)
}

func TestHangStopsOnClose(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Faults: Faults{HangProbability: 1, HangDuration: time.Hour}})
	errc := make(chan error, 1)
	go func() {
		_, err := b.try(AccessTokenDefault, "GET", "/crm/v3/objects/contacts", nil)
		errc <- err
	}()
	testwait.For(t, "the request to hang", func() bool { return b.srv.Counters().FaultsInjected["hang"] == 1 })
	if err := b.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := testwait.Recv(t, "the request to return", errc); err == nil {
		t.Fatal("hanging request got an answer")
	}
	if err := b.srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := b.srv.WaitWebhooksIdle(context.Background()); err != nil {
		t.Fatalf("WaitWebhooksIdle with nothing pending: %v", err)
	}
	if err := b.srv.Start("127.0.0.1:0"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close = %v", err)
	}
}

func TestLatencyFault(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Faults: Faults{Latency: time.Millisecond}})
	wantStatus(t, b.do("GET", "/crm/v3/objects/contacts", nil), http.StatusOK)
	if b.srv.Counters().FaultsInjected["latency"] != 1 {
		t.Fatal("latency not counted")
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{WebhookBatchSize: 101},
		{WebhookURL: "not a url"},
		{Faults: Faults{Error500: 2}},
		{Faults: Faults{HangProbability: 0.5}},
		{TenSecondLimit: -1},
	} {
		if s, err := New(cfg); err == nil {
			s.Close()
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}
