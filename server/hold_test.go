package server

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/store"
)

// TestReplicaHoldsWithItsPeers: a replica that starts while another one holds
// its calls (it noted the shared budget short just now) holds too: its
// outbound worker reads the shared budget through the server's metered budget,
// so the first call of a new contact is held once before it goes
// (outbound.Config.Hold), although this replica's calls were never refused.
func TestReplicaHoldsWithItsPeers(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		db := dbtest.Migrated(t, d)
		peer, err := budget.NewSQL(db.DB, d, budget.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := peer.NoteShort(ctx, BudgetKeyDefault); err != nil {
			t.Fatal(err)
		}
		sim := hubspotsim.NewTest(t, hubspotsim.Config{})
		srv, err := New(Config{
			DatabaseURL: db.URL, Addr: "127.0.0.1:0", HubSpotAPIBase: sim.URL(),
			HubSpotAccessToken: hubspotsim.AccessTokenDefault, DisableWebhooks: true,
			APITokens: []string{testAPIToken}, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Stop(context.Background()) })
		base := "http://" + srv.Addr()

		resp, err := apiPost(base+"/api/records/contacts", strings.NewReader(`{"fields":{"email":"held@example.com"}}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create = %d", resp.StatusCode)
		}
		var body string
		testwait.For(t, "the contact's upsert on /metrics", func() bool {
			_, body = get(t, base+"/metrics")
			return strings.Contains(body, MetricOutboundEvents+`{result="completed"} 1`)
		})
		if want := MetricOutboundEvents + `{result="held"} 1`; !strings.Contains(body, want) {
			t.Errorf("metrics lack %q: the replica did not hold the contact's call with its peers:\n%s", want, grepLines(body, MetricOutboundEvents))
		}
	})
}
