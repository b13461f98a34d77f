package server

import (
	"context"
	"github.com/hubsync/hubsync/internal/testwait"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// TestOutboundMetricsExported: the outbound worker's counters appear on
// /metrics from the start, and count the upsert that pushes a new contact.
func TestOutboundMetricsExported(t *testing.T) { dbtest.Each(t, testOutboundMetricsExported) }

func testOutboundMetricsExported(t *testing.T, d store.Dialect) {
	db := dbtest.Migrated(t, d)
	sim := hubspotsim.NewTest(t, hubspotsim.Config{})
	srv, err := New(Config{
		DatabaseURL: db.URL, Addr: "127.0.0.1:0", HubSpotAPIBase: sim.URL(),
		HubSpotAccessToken: hubspotsim.AccessTokenDefault, DisableWebhooks: true,
		APITokens: []string{testAPIToken}, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	base := "http://" + srv.Addr()

	_, body := get(t, base+"/metrics")
	for _, want := range []string{
		"# TYPE " + MetricOutboundCalls + " counter",
		MetricOutboundCalls + `{op="upsert",outcome="ok"} 0`,
		MetricOutboundRateLimited + " 0",
		MetricOutboundCoalesced + " 0",
		MetricOutboundEvents + `{result="completed"} 0`,
		MetricOutboundEvents + `{result="failed"} 0`,
		MetricOutboundEvents + `{result="superseded"} 0`,
		MetricOutboundBudgetDenied + " 0",
		MetricOutboundBudgetBooked + " 0",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, grepLines(body, "hubsync_outbound"))
		}
	}

	resp, err := apiPost(base+"/api/records/contacts", strings.NewReader(`{"fields":{"email":"metrics@example.com"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d", resp.StatusCode)
	}
	testwait.For(t, "the upsert and its completion on /metrics", func() bool {
		_, body := get(t, base+"/metrics")
		return strings.Contains(body, MetricOutboundCalls+`{op="upsert",outcome="ok"} 1`) &&
			strings.Contains(body, MetricOutboundEvents+`{result="completed"} 1`)
	})
}
