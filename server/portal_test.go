package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/store"
)

// TestWebhooksOfAnotherPortalRefused: serve learns the access token's
// HubSpot account at start; a signed delivery mixing that account's event
// with another account's (an app installed in both) stores the first only.
func TestWebhooksOfAnotherPortalRefused(t *testing.T) {
	db := dbtest.Migrated(t, store.SQLite)
	srv := startServer(t, Config{DatabaseURL: db.URL, DisableOutboundWorker: true, DisableSyncWorker: true})
	base := "http://" + srv.Addr()
	now := time.Now()
	code, answer := deliverSigned(t, base,
		hubspot.WebhookEvent{EventID: 1, PortalID: hubspotsim.PortalIDDefault, OccurredAt: now.UnixMilli(), SubscriptionType: "contact.deletion", ObjectID: 7},
		hubspot.WebhookEvent{EventID: 2, PortalID: 99999, OccurredAt: now.UnixMilli(), SubscriptionType: "contact.deletion", ObjectID: 8})
	if code != http.StatusOK || !strings.Contains(answer, `"inserted":1`) || !strings.Contains(answer, `"rejected":1`) {
		t.Fatalf("delivery answered %d %s; want 200 storing 1, rejecting 1", code, answer)
	}
	var ext string
	if err := srv.st.DB().QueryRowContext(context.Background(), "SELECT ExternalID FROM _System_IntegrationInbound").Scan(&ext); err != nil || ext != "7" {
		t.Fatalf("stored event of %q (%v); want the account's object 7 only", ext, err)
	}
}

// TestPortalIDContradictedByHubSpot: a HUBSPOT_PORTAL_ID that is not the
// access token's account stops serve at start, naming both.
func TestPortalIDContradictedByHubSpot(t *testing.T) {
	db := dbtest.Migrated(t, store.SQLite)
	sim := hubspotsim.NewTest(t, hubspotsim.Config{})
	srv, err := New(Config{
		DatabaseURL: db.URL, Addr: "127.0.0.1:0", HubSpotAPIBase: sim.URL(), HubSpotAccessToken: hubspotsim.AccessTokenDefault,
		HubSpotClientSecret: hubspotsim.ClientSecretDefault, HubSpotPortalID: "777", Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	err = srv.Start(context.Background())
	if err == nil {
		_ = srv.Stop(context.Background())
		t.Fatal("serve started with a portal id HubSpot contradicts")
	}
	if want := "HubSpotPortalID is 777, but the access token (HubSpotAccessToken) belongs to HubSpot account 12345"; !strings.Contains(err.Error(), want) {
		t.Fatalf("start: %v; want it to say %q", err, want)
	}
}

// TestPortalIDSpelledWithZeros: HUBSPOT_PORTAL_ID 012345 or +12345 is
// account 12345, whose events are applied (on a webhook-only replica, which
// asks HubSpot nothing).
func TestPortalIDSpelledWithZeros(t *testing.T) {
	for _, id := range []string{"012345", "+12345"} {
		t.Run(id, func(t *testing.T) {
			db := dbtest.Migrated(t, store.SQLite)
			srv, err := New(Config{DatabaseURL: db.URL, Addr: "127.0.0.1:0", HubSpotClientSecret: hubspotsim.ClientSecretDefault,
				HubSpotPortalID: id, DisableOutboundWorker: true, DisableSyncWorker: true, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatalf("config refused: %v", err)
			}
			if err := srv.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Stop(context.Background()) })
			code, answer := deliverSigned(t, "http://"+srv.Addr(),
				hubspot.WebhookEvent{EventID: 1, PortalID: 12345, OccurredAt: time.Now().UnixMilli(), SubscriptionType: "contact.deletion", ObjectID: 7})
			if !strings.Contains(answer, `"inserted":1`) {
				t.Errorf("HUBSPOT_PORTAL_ID=%s, event of portal 12345: %d %s; want it stored", id, code, answer)
			}
		})
	}
}

// TestPortalLearnedAfterAFailedStart: HubSpot does not answer the account
// question at start (a dropped connection, a 5xx); serve asks again in the
// background, and once it learns the portal, other accounts' events are
// refused. Before, such a replica accepted them for as long as it ran.
func TestPortalLearnedAfterAFailedStart(t *testing.T) {
	defer func(d time.Duration) { portalLookupFirst = d }(portalLookupFirst)
	portalLookupFirst = 10 * time.Millisecond
	sim := hubspotsim.NewTest(t, hubspotsim.Config{})
	target, err := url.Parse(sim.URL())
	if err != nil {
		t.Fatal(err)
	}
	var failing atomic.Bool
	failing.Store(true)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() && r.URL.Path == "/account-info/v3/details" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status":"error","message":"unavailable","category":"INTERNAL_ERROR"}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	db := dbtest.Migrated(t, store.SQLite)
	srv, err := New(Config{DatabaseURL: db.URL, Addr: "127.0.0.1:0", HubSpotAPIBase: front.URL, HubSpotAccessToken: hubspotsim.AccessTokenDefault,
		HubSpotClientSecret: hubspotsim.ClientSecretDefault, HubSpotTimeZone: "UTC", DisableOutboundWorker: true, DisableSyncWorker: true,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	base := "http://" + srv.Addr()
	var eventID int64
	foreign := func() string {
		eventID++
		_, answer := deliverSigned(t, base, hubspot.WebhookEvent{EventID: eventID, PortalID: 99999, OccurredAt: time.Now().UnixMilli(), SubscriptionType: "contact.deletion", ObjectID: 7})
		return answer
	}
	if got := foreign(); !strings.Contains(got, `"inserted":1`) {
		t.Fatalf("before the portal is known: %s; want the event stored", got)
	}
	failing.Store(false)
	testwait.For(t, "another account's events refused", func() bool { return strings.Contains(foreign(), `"rejected":1`) })
}

// deliverSigned posts events to base's webhook route, signed as HubSpot
// signs them, and returns the answer's status and body.
func deliverSigned(t *testing.T, base string, events ...hubspot.WebhookEvent) (int, string) {
	t.Helper()
	now := time.Now()
	body, err := json.Marshal(events)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, base+"/webhooks/hubspot", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(hubspot.HeaderSignatureV3, hubspot.SignV3(hubspotsim.ClientSecretDefault, http.MethodPost, base+"/webhooks/hubspot", body, now.UnixMilli()))
	req.Header.Set(hubspot.HeaderRequestTimestamp, strconv.FormatInt(now.UnixMilli(), 10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(answer)
}
