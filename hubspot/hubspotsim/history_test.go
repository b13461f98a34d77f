package hubspotsim

import (
	"net/http"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/testcheck"
)

// A batch read with propertiesWithHistory returns every version of the named
// properties, newest first, with who wrote it: the app (INTEGRATION) or a
// user (CRM_UI).
func TestBatchReadWithHistory(t *testing.T) {
	b := setup(t, Config{AppID: 77})
	a := b.do("POST", "/crm/v3/objects/contacts", props("email", "h@x.com", "firstname", "A"))
	id := testcheck.As[string](t, "id", a.json(t)["id"])
	b.clock.Advance(time.Second)
	if err := b.srv.UserUpdate("contacts", id, map[string]string{"firstname": "B"}); err != nil {
		t.Fatal(err)
	}
	a = b.do("POST", "/crm/v3/objects/contacts/batch/read", map[string]any{
		"inputs": []map[string]string{{"id": id}}, "properties": []string{"firstname"}, "propertiesWithHistory": []string{"firstname", "lastname"},
	})
	wantStatus(t, a, http.StatusOK)
	res := testcheck.As[[]any](t, "results", a.json(t)["results"])
	hist := testcheck.As[map[string]any](t, "propertiesWithHistory", testcheck.As[map[string]any](t, "result", res[0])["propertiesWithHistory"])
	first := testcheck.As[[]any](t, "firstname", hist["firstname"])
	if len(first) != 2 {
		t.Fatalf("firstname history = %v; want 2 versions", first)
	}
	newest, oldest := first[0].(map[string]any), first[1].(map[string]any)
	if newest["value"] != "B" || newest["sourceType"] != "CRM_UI" || oldest["value"] != "A" || oldest["sourceType"] != "INTEGRATION" || oldest["sourceId"] != "77" {
		t.Fatalf("history = %v", first)
	}
	if newest["timestamp"] == oldest["timestamp"] {
		t.Fatalf("both versions have the timestamp %v", newest["timestamp"])
	}
	if l := testcheck.As[[]any](t, "lastname", hist["lastname"]); len(l) != 0 {
		t.Fatalf("a never-set property has history %v", l)
	}
	// Without propertiesWithHistory the answer has none.
	a = b.do("POST", "/crm/v3/objects/contacts/batch/read", map[string]any{"inputs": []map[string]string{{"id": id}}, "properties": []string{"firstname"}})
	if _, ok := testcheck.As[map[string]any](t, "result", testcheck.As[[]any](t, "results", a.json(t)["results"])[0])["propertiesWithHistory"]; ok {
		t.Fatal("a plain read carries propertiesWithHistory")
	}
}

// Paused webhooks are never sent; DropNext drops exactly that many events.
func TestWebhookSwitch(t *testing.T) {
	rcv := newReceiver(t, "s3cret", 0)
	b := setup(t, Config{ClientSecret: "s3cret", WebhookURL: rcv.url()})
	id, err := b.srv.UserCreate("contacts", map[string]string{"email": "w@x.com"})
	if err != nil {
		t.Fatal(err)
	}
	idle(t, b.srv)
	sent := b.srv.Counters().WebhooksSent

	b.srv.SetWebhooks(WebhookSwitch{Paused: true})
	for _, v := range []string{"A", "B"} {
		if err := b.srv.UserUpdate("contacts", id, map[string]string{"firstname": v}); err != nil {
			t.Fatal(err)
		}
	}
	b.srv.SetWebhooks(WebhookSwitch{DropNext: 1})
	for _, v := range []string{"C", "D"} {
		if err := b.srv.UserUpdate("contacts", id, map[string]string{"firstname": v}); err != nil {
			t.Fatal(err)
		}
	}
	idle(t, b.srv)
	c := b.srv.Counters()
	if c.WebhooksSuppressed != 3 || c.WebhooksSent != sent+1 {
		t.Fatalf("suppressed %d, sent %d more; want 3 suppressed and only D's event sent", c.WebhooksSuppressed, c.WebhooksSent-sent)
	}
	batches, _ := rcv.snapshot()
	last := batches[len(batches)-1]
	if len(last) != 1 || last[0].PropertyValue != "D" {
		t.Fatalf("last delivery = %+v; want D's change", last)
	}
	// The control route refuses a negative count.
	wantStatus(t, b.do("PUT", "/_sim/webhooks", map[string]any{"dropNext": -1}), http.StatusBadRequest)
	wantStatus(t, b.do("PUT", "/_sim/webhooks", "{"), http.StatusBadRequest)
	wantStatus(t, b.do("PUT", "/_sim/webhooks", map[string]any{"paused": false}), http.StatusOK)
}
