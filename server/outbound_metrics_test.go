package server

import (
	"strings"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/store"
)

// TestOutboundMetricsExported: the outbound worker's counters appear on
// /metrics from the start, and count the upsert that pushes a new contact.
func TestOutboundMetricsExported(t *testing.T) { dbtest.Each(t, testOutboundMetricsExported) }

func testOutboundMetricsExported(t *testing.T, d store.Dialect) {
	db := dbtest.Migrated(t, d)
	base := "http://" + startServer(t, Config{DatabaseURL: db.URL, APITokens: []string{testAPIToken}, DisableWebhooks: true}).Addr()
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

	createContact(t, base, "metrics@example.com")
	testwait.For(t, "the upsert and its completion on /metrics", func() bool {
		_, body := get(t, base+"/metrics")
		return strings.Contains(body, MetricOutboundCalls+`{op="upsert",outcome="ok"} 1`) &&
			strings.Contains(body, MetricOutboundEvents+`{result="completed"} 1`)
	})
}
