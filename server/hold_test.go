package server

import (
	"context"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/budget"
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
		base := "http://" + startServer(t, Config{DatabaseURL: db.URL, APITokens: []string{testAPIToken}, DisableWebhooks: true}).Addr()
		createContact(t, base, "held@example.com")
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
