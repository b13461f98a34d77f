package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testcheck"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/store"
)

func post(t *testing.T, url, key, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testAPIToken)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	json.Unmarshal(b, &out) //nolint:errcheck // checked by the callers' fields
	return resp.StatusCode, out
}

// TestSubscriptionRequestReachesHubSpot: the served API accepts a request,
// answers its retry with the same id, and the outbound worker brings
// HubSpot to its state; a records write with an Idempotency-Key creates one
// record however often it is retried.
func TestSubscriptionRequestReachesHubSpot(t *testing.T) {
	db := dbtest.New(t, store.SQLite)
	sim := hubspotsim.NewTest(t, hubspotsim.Config{})
	m, err := mapping.Default().WithSubscriptions(1, mapping.Subscription{BrandID: "acme", ProductID: "news", SubscriptionID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{
		DatabaseURL: db.URL, Addr: "127.0.0.1:0", HubSpotAPIBase: sim.URL(), Mapping: m,
		HubSpotAccessToken: hubspotsim.AccessTokenDefault, DisableWebhooks: true,
		APITokens: []string{testAPIToken}, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) }) //nolint:errcheck
	base := "http://" + srv.Addr()

	body := `{"brand_id":"acme","product_id":"news","contact_key":"srv@example.com","desired_state":"subscribed"}`
	// The route sits behind the /api guard: no token, no request.
	anon, _ := http.NewRequest("POST", base+"/api/subscription-requests", strings.NewReader(body))
	anon.Header.Set("Content-Type", "application/json")
	anon.Header.Set("Idempotency-Key", "sub-anon")
	resp, err := http.DefaultClient.Do(anon)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("request without a token = %d, want 401", resp.StatusCode)
	}
	code, first := post(t, base+"/api/subscription-requests", "sub-1", body)
	if code != http.StatusCreated {
		t.Fatalf("create = %d %v", code, first)
	}
	code, again := post(t, base+"/api/subscription-requests", "sub-1", body)
	if code != http.StatusOK || again["id"] != first["id"] {
		t.Fatalf("retry = %d %v; want 200 with id %v", code, again, first["id"])
	}
	id := testcheck.As[string](t, "the created request's id", first["id"])
	testwait.For(t, "the request synced", func() bool {
		req, _ := http.NewRequest("GET", base+"/api/subscription-requests/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+testAPIToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `"sync_status":"synced"`)
	})
	if got := sim.SubscriptionStatus("srv@example.com", 1); got != "SUBSCRIBED" {
		t.Fatalf("HubSpot status %s, want SUBSCRIBED", got)
	}

	rec := `{"fields":{"email":"idem@example.com"}}`
	c1, r1 := post(t, base+"/api/records/contacts", "rec-1", rec)
	c2, r2 := post(t, base+"/api/records/contacts", "rec-1", rec)
	if c1 != http.StatusCreated || c2 != http.StatusCreated || r1["id"] != r2["id"] {
		t.Fatalf("records create and retry = %d %v, %d %v; want one record", c1, r1, c2, r2)
	}
	if c, _ := post(t, base+"/api/records/contacts", "rec-1", `{"fields":{"email":"other@example.com"}}`); c != http.StatusConflict {
		t.Fatalf("records key reused with another body = %d, want 409", c)
	}
}
