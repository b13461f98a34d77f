package inbound

import (
	"fmt"
	"github.com/hubsync/hubsync/internal/testcheck"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/store"
)

// An inbound read calibrates the shared budget: the client's response hook,
// wired as the server wires it, hands the read's rate-limit headers and its
// 429 to Budget.Observe. (The worker itself no longer observes anything.)
func TestWorkerReadCalibratesBudgetThroughClientHook(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set(hubspot.HeaderRateLimitInterval, "10000")
		h.Set(hubspot.HeaderRateLimitMax, "190")
		h.Set(hubspot.HeaderRateLimitDaily, "625000")
		h.Set(hubspot.HeaderRateLimitDailyRemaining, "624000")
		h.Set("Content-Type", "application/json")
		if calls.Add(1) == 1 {
			h.Set(hubspot.HeaderRateLimitRemaining, "0")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"status":"error","message":"You have reached your ten_secondly_rolling limit.","errorType":"RATE_LIMIT","policyName":"TEN_SECONDLY_ROLLING"}`)
			return
		}
		h.Set(hubspot.HeaderRateLimitRemaining, "150")
		fmt.Fprintf(w, `{"status":"COMPLETE","results":[{"id":"1","properties":{"email":"a@example.com","firstname":"A"},"createdAt":"2030-01-01T00:00:00Z","updatedAt":"2030-01-01T00:00:00Z","archived":false}]}`)
	}))
	t.Cleanup(srv.Close)
	bud := &fakeBudget{left: 10}
	client, err := hubspot.NewClient(hubspot.Config{
		BaseURL: srv.URL, AccessToken: "token", OnResponse: budget.ObserveHubSpot(bud, BudgetKeyDefault, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	w := b.newWorker(t, client, "w1", func(c *WorkerConfig) { c.Budget = bud })
	b.deliverEvents(t, whEvent("contact.creation", 1, t0))

	drain(t, w) // the read is refused (429) and retried later
	if ev := testcheck.Index(t, "the inbound events", b.all(t), 0); ev.Status != store.StatusPending || ev.RetryCount != 1 {
		t.Fatalf("after the 429: status %s retries %d, want pending 1", ev.Status, ev.RetryCount)
	}
	b.clock.Advance(time.Hour)
	drain(t, w) // the read succeeds
	if _, ok := b.applier.record("contacts", "1"); !ok {
		t.Fatal("contact not created by the second read")
	}

	bud.mu.Lock()
	defer bud.mu.Unlock()
	if len(bud.observed) != 2 {
		t.Fatalf("budget observations %+v, want one per read", bud.observed)
	}
	if o := bud.observed[0]; !o.RateLimited || o.Policy != "TEN_SECONDLY_ROLLING" || o.Max != 190 || o.Remaining != 0 {
		t.Errorf("observation of the 429 = %+v", o)
	}
	want := budget.Observation{Max: 190, Remaining: 150, Interval: 10 * time.Second, DailyMax: 625000, DailyRemaining: 624000}
	o := bud.observed[1]
	if !o.Grant.Granted {
		t.Errorf("observation of the read = %+v; want it to carry the read's grant (budget.WithCall)", o)
	}
	if o.Grant = (budget.Reservation{}); o != want {
		t.Errorf("observation of the read = %+v, want %+v", o, want)
	}
}
