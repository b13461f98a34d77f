package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/store"
)

// sample returns the value of the exposition line that starts with series
// (name and labels exactly as exposed), or -1.
func sample(body, series string) float64 {
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// The figures behind the alert rules and the dashboard's latency panels move
// with real work: a record pushed to HubSpot stamps the outbound queue's last
// claim, its wait and the HubSpot call's duration, and the budget's limit and
// use are exported.
func TestClaimLatencyAndBudgetMetrics(t *testing.T) {
	db := dbtest.Migrated(t, store.SQLite)
	before := time.Now()
	srv := startServer(t, Config{DatabaseURL: db.URL, APITokens: []string{testAPIToken}, StatsTTL: time.Millisecond})
	base := "http://" + srv.Addr()
	_, body := get(t, base+"/metrics")
	if v := sample(body, `hubsync_queue_last_claim_timestamp_seconds{direction="outbound",key="hubspot"}`); v != -1 {
		t.Fatalf("last claim before any claim = %v, want the series absent", v)
	}
	if v := sample(body, `hubsync_budget_limit_calls{key="`+BudgetKeyDefault+`",window="10s"}`); v != RateLimitDefault {
		t.Errorf("10 s budget limit = %v, want %d", v, RateLimitDefault)
	}
	if v := sample(body, `hubsync_budget_limit_calls{key="`+BudgetKeyDefault+`",window="1d"}`); v != 250000 {
		t.Errorf("daily budget limit = %v, want 250000", v)
	}

	created := time.Now()
	createContact(t, base, "metrics@example.com")
	testwait.For(t, "the outbound event processed and counted", func() bool {
		_, body = get(t, base+"/metrics")
		return sample(body, `hubsync_events_processed_total{direction="outbound",key="hubspot"}`) >= 1 &&
			sample(body, `hubsync_budget_calls_today{key="`+BudgetKeyDefault+`"}`) >= 1
	})
	// The call was made after created: within HubSpot's 10 s window until
	// then (a slower run only checks that the series is there).
	inWindow := sample(body, `hubsync_budget_window_calls{key="`+BudgetKeyDefault+`"}`)
	if elapsed := time.Since(created); (elapsed < 10*time.Second && inWindow < 1) || inWindow < 0 {
		t.Errorf("calls in the budget's window = %v %s after the contact was created, want at least 1", inWindow, elapsed)
	}
	if v := sample(body, `hubsync_budget_booked_calls{key="`+BudgetKeyDefault+`"}`); v != 0 {
		t.Errorf("calls booked ahead = %v, want 0 (the budget had room)", v)
	}
	if v := sample(body, `hubsync_budget_last_short_timestamp_seconds{key="`+BudgetKeyDefault+`"}`); v != -1 {
		t.Errorf("last short = %v before the budget was ever short, want the series absent", v)
	}
	last := sample(body, `hubsync_queue_last_claim_timestamp_seconds{direction="outbound",key="hubspot"}`)
	if last < float64(before.Unix()) || last > float64(time.Now().Unix()+1) {
		t.Errorf("outbound last claim = %v, want a time between %d and now", last, before.Unix())
	}
	if n := sample(body, `hubsync_event_wait_seconds_count{direction="outbound",key="hubspot"}`); n < 1 {
		t.Errorf("outbound event waits observed = %v, want at least 1", n)
	}
	if n := sample(body, `hubsync_hubspot_request_duration_seconds_count{method="POST"}`); n < 1 {
		t.Errorf("HubSpot POST durations observed = %v, want at least 1", n)
	}
	if v := sample(body, `hubsync_budget_paused{key="`+BudgetKeyDefault+`"}`); v != 0 {
		t.Errorf("budget paused = %v, want 0", v)
	}
	if v := sample(body, MetricBudgetUp); v != 1 {
		t.Errorf("%s = %v, want 1", MetricBudgetUp, v)
	}
	// Another replica finds the budget short: every replica's metric says when.
	peer, err := budget.NewSQL(db.DB, store.SQLite, budget.Config{})
	if err != nil {
		t.Fatal(err)
	}
	shortAt := time.Now()
	if err := peer.NoteShort(context.Background(), BudgetKeyDefault); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the budget's last short instant exported", func() bool {
		_, body = get(t, base+"/metrics")
		return sample(body, `hubsync_budget_last_short_timestamp_seconds{key="`+BudgetKeyDefault+`"}`) != -1
	})
	if v := sample(body, `hubsync_budget_last_short_timestamp_seconds{key="`+BudgetKeyDefault+`"}`); v < float64(shortAt.Unix()) || v > float64(time.Now().Unix()+1) {
		t.Errorf("last short = %v, want a time between %d and now", v, shortAt.Unix())
	}

	// A webhook answer, even a refusal, is timed.
	r, err := http.Post(base+"/webhooks/hubspot", "application/json", strings.NewReader(`[]`))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	_, body = get(t, base+"/metrics")
	if n := sample(body, MetricWebhookDuration+"_count"); n != 1 {
		t.Errorf("webhook answers timed = %v, want 1", n)
	}
}
