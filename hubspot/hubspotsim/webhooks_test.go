package hubspotsim

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/hubsync/hubsync/internal/testcheck"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
)

// receiver is a webhook endpoint that checks v3 signatures and records batches.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	secret string
	mu     sync.Mutex
	// fail answers 500 to the first fail requests.
	fail    int
	batches [][]hubspot.WebhookEvent
	bad     []string
}

func newReceiver(t *testing.T, secret string, fail int) *receiver {
	r := &receiver{t: t, secret: secret, fail: fail}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) url() string { return r.srv.URL + "/hooks?x=1" }

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	ts, err := strconv.ParseInt(req.Header.Get(hubspot.HeaderRequestTimestamp), 10, 64)
	want := hubspot.SignV3(r.secret, req.Method, "http://"+req.Host+req.URL.RequestURI(), body, ts)
	switch {
	case err != nil:
		r.bad = append(r.bad, "bad timestamp")
	case req.Header.Get(hubspot.HeaderSignatureV3) != want:
		r.bad = append(r.bad, "bad signature")
	case req.Header.Get("Content-Type") != "application/json" || req.Header.Get(hubspot.HeaderSignatureVersion) != "v3":
		r.bad = append(r.bad, "bad headers")
	}
	var batch []hubspot.WebhookEvent
	if err := json.Unmarshal(body, &batch); err != nil {
		r.bad = append(r.bad, "bad body: "+err.Error())
	}
	r.batches = append(r.batches, batch)
	if r.fail > 0 {
		r.fail--
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) snapshot() ([][]hubspot.WebhookEvent, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]hubspot.WebhookEvent(nil), r.batches...), append([]string(nil), r.bad...)
}

func idle(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitWebhooksIdle(ctx); err != nil {
		t.Fatalf("WaitWebhooksIdle: %v", err)
	}
}

func TestWebhooks(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, "s3cret", 0)
	b := setup(t, Config{ClientSecret: "s3cret", WebhookURL: rcv.url(), AppID: 77, PortalID: 999})

	a := b.do("POST", "/crm/v3/objects/contacts", props("email", "a@x.com", "firstname", "A"))
	id := testcheck.As[string](t, "id", a.json(t)["id"])
	if err := b.srv.UserUpdate("contacts", id, map[string]string{"firstname": "B", "email": "a@x.com"}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, b.do("DELETE", "/crm/v3/objects/contacts/"+id, nil), http.StatusNoContent)
	idle(t, b.srv)

	batches, bad := rcv.snapshot()
	if len(bad) > 0 {
		t.Fatalf("receiver complaints: %v", bad)
	}
	byType := map[string][]hubspot.WebhookEvent{}
	for _, batch := range batches {
		for _, e := range batch {
			byType[e.SubscriptionType] = append(byType[e.SubscriptionType], e)
			if e.PortalID != 999 || e.AppID != 77 || strconv.FormatInt(e.ObjectID, 10) != id || e.AttemptNumber != 0 || e.OccurredAt != b.clock.Now().UnixMilli() {
				t.Errorf("event = %+v", e)
			}
		}
	}
	if len(byType["contact.creation"]) != 1 || len(byType["contact.deletion"]) != 1 || len(byType["contact.propertyChange"]) != 3 {
		t.Fatalf("events = %+v", byType)
	}
	for _, e := range byType["contact.propertyChange"] {
		switch {
		case e.PropertyValue == "B":
			if e.ChangeSource != "CRM_UI" || e.SourceID != "" || e.PropertyName != "firstname" {
				t.Errorf("user edit event = %+v", e)
			}
		default:
			if e.ChangeSource != "INTEGRATION" || e.SourceID != "77" {
				t.Errorf("API write event = %+v", e)
			}
		}
	}
	c := b.srv.Counters()
	if c.WebhooksSent != 5 || c.WebhooksPending != 0 || c.WebhookFailures != 0 {
		t.Fatalf("counters = %+v", c)
	}
}

func TestWebhookBatchesAndMerge(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, ClientSecretDefault, 0)
	b := setup(t, Config{WebhookURL: rcv.url(), WebhookConcurrency: 1})
	a := b.do("POST", "/crm/v3/objects/contacts/batch/create", inputs(100, func(i int) map[string]any {
		return props("email", fmt.Sprintf("c%d@x.com", i), "firstname", "F")
	}))
	wantStatus(t, a, http.StatusCreated)
	res := testcheck.As[[]any](t, "results", a.json(t)["results"])
	p, m := testcheck.As[string](t, "id", testcheck.As[map[string]any](t, "res element 0", testcheck.Index(t, "res", res, 0))["id"]), testcheck.As[string](t, "id", testcheck.As[map[string]any](t, "res element 1", testcheck.Index(t, "res", res, 1))["id"])
	if err := b.srv.UserMerge("contacts", p, m); err != nil {
		t.Fatal(err)
	}
	idle(t, b.srv)
	batches, bad := rcv.snapshot()
	if len(bad) > 0 {
		t.Fatalf("receiver complaints: %v", bad)
	}
	total := 0
	var merge *hubspot.WebhookEvent
	for _, batch := range batches {
		if len(batch) > 100 || len(batch) == 0 {
			t.Fatalf("batch of %d events", len(batch))
		}
		total += len(batch)
		for _, e := range batch {
			if e.SubscriptionType == "contact.merge" {
				merge = &e
			}
		}
	}
	if total != 301 || len(batches) < 4 {
		t.Fatalf("%d events in %d batches, want 301 in at least 4", total, len(batches))
	}
	if merge == nil || strconv.FormatInt(merge.PrimaryObjectID, 10) != p || len(merge.MergedObjectIDs) != 1 ||
		strconv.FormatInt(merge.MergedObjectIDs[0], 10) != m || merge.ChangeSource != "CRM_UI" {
		t.Fatalf("merge event = %+v", merge)
	}
}

func TestWebhookRetry(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, ClientSecretDefault, 2)
	b := setup(t, Config{WebhookURL: rcv.url(), WebhookRetryBase: time.Millisecond})
	if _, err := b.srv.UserCreate("companies", map[string]string{"name": "Acme"}); err != nil {
		t.Fatal(err)
	}
	idle(t, b.srv)
	batches, bad := rcv.snapshot()
	if len(bad) > 0 {
		t.Fatalf("receiver complaints: %v", bad)
	}
	if len(batches) != 3 {
		t.Fatalf("%d deliveries, want 3", len(batches))
	}
	for i, batch := range batches {
		if len(batch) != 2 || batch[0].AttemptNumber != i || batch[0].SubscriptionType != "company.creation" {
			t.Fatalf("delivery %d = %+v", i, batch)
		}
	}
	c := b.srv.Counters()
	if c.WebhookDeliveries != 3 || c.WebhookFailures != 2 || c.WebhooksSent != 2 || c.WebhooksDropped != 0 {
		t.Fatalf("counters = %+v", c)
	}
}

func TestWebhookGiveUpAndFaults(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, ClientSecretDefault, 1000)
	b := setup(t, Config{WebhookURL: rcv.url(), WebhookRetryBase: time.Millisecond, WebhookMaxAttempts: 3})
	b.srv.UserCreate("deals", nil)
	idle(t, b.srv)
	if c := b.srv.Counters(); c.WebhookDeliveries != 3 || c.WebhooksDropped != 1 || c.WebhooksSent != 0 {
		t.Fatalf("counters = %+v", c)
	}

	rcv2 := newReceiver(t, ClientSecretDefault, 0)
	if err := b.srv.SetWebhookURL(rcv2.url()); err != nil {
		t.Fatal(err)
	}
	b.srv.ResetCounters()
	b.srv.SetFaults(Faults{WebhookFailure: 1})
	b.srv.UserCreate("deals", nil)
	idle(t, b.srv)
	c := b.srv.Counters()
	if c.FaultsInjected["webhookFailure"] != 3 || c.WebhooksDropped != 1 {
		t.Fatalf("counters with WebhookFailure = %+v", c)
	}
	batches, _ := rcv2.snapshot()
	if len(batches) != 3 {
		t.Fatalf("receiver saw %d attempts, want 3 (failed attempts are still sent)", len(batches))
	}

	b.srv.SetFaults(Faults{WebhookDuplicate: 1})
	b.srv.ResetCounters()
	b.srv.UserCreate("deals", nil)
	idle(t, b.srv)
	if c := b.srv.Counters(); c.WebhookDeliveries != 2 || c.WebhooksSent != 1 || c.FaultsInjected["webhookDuplicate"] != 1 {
		t.Fatalf("counters with WebhookDuplicate = %+v", c)
	}
}

func TestWaitWebhooksIdleHonoursContext(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, ClientSecretDefault, 1000)
	b := setup(t, Config{WebhookURL: rcv.url(), WebhookRetryBase: time.Hour})
	b.srv.UserCreate("contacts", map[string]string{"email": "a@x.com"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.srv.WaitWebhooksIdle(ctx); err != context.Canceled {
		t.Fatalf("WaitWebhooksIdle = %v, want context.Canceled", err)
	}
	// Close stops the dispatcher even with a retry an hour away (goleak checks).
	b.srv.Close()
}
