package subscriptions_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testcheck"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/subscriptions"
)

func testMapping(t testing.TB) *mapping.Set {
	t.Helper()
	m, err := mapping.Default().WithSubscriptions(2,
		mapping.Subscription{BrandID: "acme", ProductID: "news", SubscriptionID: "1"},
		mapping.Subscription{BrandID: "acme", ProductID: "offers", SubscriptionID: "2"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func do(t *testing.T, h http.Handler, method, path, key, body string) (*httptest.ResponseRecorder, map[string]any) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if key != "" {
		r.Header.Set("Idempotency-Key", key)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var out map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s: body %q is not JSON: %v", method, path, w.Body, err)
	}
	return w, out
}

func TestHandler(t *testing.T) {
	st, s := newStore(t, store.SQLite)
	h, err := subscriptions.NewHandler(subscriptions.HandlerConfig{Store: s, Mapping: testMapping(t)})
	if err != nil {
		t.Fatal(err)
	}
	const body = `{"brand_id":"acme","product_id":"news","contact_key":"Ada@Example.com","desired_state":"subscribed"}`
	w, out := do(t, h, "POST", "/api/subscription-requests", "key-1", body)
	if w.Code != http.StatusCreated || out["sync_status"] != "pending" || out["applied_sequence"] != 1.0 || out["mapping_version"] != 2.0 {
		t.Fatalf("create = %d %v", w.Code, out)
	}
	id := testcheck.As[string](t, "the created request's id", out["id"])

	w, out = do(t, h, "POST", "/api/subscription-requests", "key-1", body)
	if w.Code != http.StatusOK || out["id"] != id || w.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry = %d %v; want 200 with id %s", w.Code, out, id)
	}

	w, out = do(t, h, "POST", "/api/subscription-requests", "key-1", strings.Replace(body, `"subscribed"`, `"unsubscribed"`, 1))
	if w.Code != http.StatusConflict || !strings.Contains(errorText(out), "key-1") || !strings.Contains(errorText(out), id) {
		t.Fatalf("conflicting body = %d %v; want 409 naming the key and %s", w.Code, out, id)
	}
	if evs := pendingEvents(t, st); len(evs) != 1 {
		t.Fatalf("%d events after a replay and a conflict, want 1", len(evs))
	}

	w, out = do(t, h, "POST", "/api/subscription-requests", "", body)
	if w.Code != http.StatusBadRequest || !strings.Contains(errorText(out), "Idempotency-Key") {
		t.Fatalf("no key = %d %v; want 400 naming Idempotency-Key", w.Code, out)
	}
	w, out = do(t, h, "POST", "/api/subscription-requests", "key-2", strings.Replace(body, "news", "sports", 1))
	if w.Code != http.StatusUnprocessableEntity || !strings.Contains(errorText(out), "sports") {
		t.Fatalf("unmapped = %d %v; want 422", w.Code, out)
	}
	w, _ = do(t, h, "POST", "/api/subscription-requests", "key-3", `{"brand_id":"acme"}`)
	if w.Code != http.StatusBadRequest {
		t.Fatalf("invalid body = %d; want 400", w.Code)
	}
	// A valid request padded past the limit with spaces (still valid JSON).
	padded := strings.Replace(body, "{", "{"+strings.Repeat(" ", subscriptions.MaxBodyBytes), 1)
	w, out = do(t, h, "POST", "/api/subscription-requests", "key-4", padded)
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(errorText(out), strconv.Itoa(subscriptions.MaxBodyBytes)) {
		t.Fatalf("oversized body = %d %v; want 413 naming the limit", w.Code, out)
	}
	long := strings.Repeat("k", subscriptions.MaxIdempotencyKeyLength+1)
	w, out = do(t, h, "POST", "/api/subscription-requests", long, strings.Replace(body, "Ada@", "Long@", 1))
	if w.Code != http.StatusBadRequest || !strings.Contains(errorText(out), "Idempotency-Key") || !strings.Contains(errorText(out), strconv.Itoa(subscriptions.MaxIdempotencyKeyLength)) {
		t.Fatalf("over-long key = %d %v; want 400 naming the header and its limit", w.Code, out)
	}
	w, _ = do(t, h, "POST", "/api/subscription-requests", long[1:], strings.Replace(body, "Ada@", "Long@", 1))
	if w.Code != http.StatusCreated {
		t.Fatalf("key of exactly %d characters = %d; want 201", subscriptions.MaxIdempotencyKeyLength, w.Code)
	}
	if evs := pendingEvents(t, st); len(evs) != 2 {
		t.Fatalf("%d events after refused requests and one at the key's limit, want 2", len(evs))
	}

	w, out = do(t, h, "GET", "/api/subscription-requests/"+id, "", "")
	if w.Code != http.StatusOK || out["id"] != id || out["sync_status"] != "pending" || out["contact_key"] != "ada@example.com" {
		t.Fatalf("get = %d %v", w.Code, out)
	}
	w, out = do(t, h, "GET", "/api/subscription-requests/unknown", "", "")
	if msg, _ := out["error"].(string); w.Code != http.StatusNotFound || !strings.Contains(msg, "HUBSYNC_SUBSCRIPTION_RETENTION") {
		t.Fatalf("get unknown = %d %v; want 404 saying settled requests are deleted after HUBSYNC_SUBSCRIPTION_RETENTION", w.Code, out)
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"brand_id":"acme","product_id":"news","contact_key":"a@b.c","desired_state":"subscribed"}`))
	f.Add([]byte(`{"brand_id":"acme","product_id":"news","contact_key":"a@b.c","desired_state":"unsubscribed"} {}`))
	f.Add([]byte(`{"brand_id":"","extra":1}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"brand_id":"acme","product_id":"news","contact_key":"a\ud800@b.c","desired_state":"subscribed"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := subscriptions.ParseRequest(body)
		if err != nil {
			return
		}
		if strings.ContainsRune(r.ContactKey, utf8.RuneError) && !strings.ContainsRune(string(body), utf8.RuneError) && !strings.Contains(strings.ToLower(string(body)), `\ufffd`) {
			t.Fatalf("%s accepted as contact_key %q: U+FFFD the body did not hold", body, r.ContactKey)
		}
		// An accepted request is canonical: parsing its own encoding gives
		// it back, with the same hash, and its record id fits the queue.
		b, _ := json.Marshal(r)
		again, err := subscriptions.ParseRequest(b)
		if err != nil || again != r || again.Hash() != r.Hash() {
			t.Fatalf("re-parse of %s = %+v, %v; want %+v", b, again, err, r)
		}
		if len(r.RecordID()) > 255 || strings.Count(r.BrandID+r.ProductID, "/") > 0 {
			t.Fatalf("record id %q does not fit the outbound queue", r.RecordID())
		}
		if r.DesiredState != subscriptions.StateSubscribed && r.DesiredState != subscriptions.StateUnsubscribed {
			t.Fatalf("desired_state %q accepted", r.DesiredState)
		}
	})
}

func mappingSub(brand, product, id string) mapping.Subscription {
	return mapping.Subscription{BrandID: brand, ProductID: product, SubscriptionID: id}
}

// errorText is the response's "error" message, or "" when it has none.
func errorText(out map[string]any) string {
	msg, _ := out["error"].(string)
	return msg
}

// TestHandlerMalformedText: a key, id or field that no database can hold as
// text (invalid UTF-8, NUL) is the client's mistake on every database:
// PostgreSQL and MariaDB refused to store it, a 500.
func TestHandlerMalformedText(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		st, s := newStore(t, d)
		h, err := subscriptions.NewHandler(subscriptions.HandlerConfig{Store: s, Mapping: testMapping(t)})
		if err != nil {
			t.Fatal(err)
		}
		const body = `{"brand_id":"acme","product_id":"news","contact_key":"ada@example.com","desired_state":"subscribed"}`
		for _, key := range []string{"k\xff\xfe", "a\x00b"} {
			if w, out := do(t, h, "POST", "/api/subscription-requests", key, body); w.Code != http.StatusBadRequest || !strings.Contains(errorText(out), "Idempotency-Key") {
				t.Errorf("Idempotency-Key %q = %d %v; want 400 naming the header", key, w.Code, out)
			}
		}
		if w, out := do(t, h, "POST", "/api/subscription-requests", "key-nul", strings.Replace(body, "ada@", `a\u0000da@`, 1)); w.Code != http.StatusBadRequest {
			t.Errorf("contact_key with NUL = %d %v; want 400", w.Code, out)
		}
		// encoding/json would decode these to U+FFFD: a contact key other
		// than the one sent, pushed to HubSpot.
		for name, ck := range map[string]string{"lone surrogate": `a\ud800da@example.com`, "invalid UTF-8": "a\xffda@example.com"} {
			if w, out := do(t, h, "POST", "/api/subscription-requests", "key-"+name, strings.Replace(body, "ada@example.com", ck, 1)); w.Code != http.StatusBadRequest {
				t.Errorf("contact_key with a %s = %d %v; want 400", name, w.Code, out)
			}
		}
		for _, id := range []string{"%ff", "a%00b"} {
			if w, out := do(t, h, "GET", "/api/subscription-requests/"+id, "", ""); w.Code != http.StatusNotFound {
				t.Errorf("GET /api/subscription-requests/%s = %d %v; want 404", id, w.Code, out)
			}
		}
		if evs := pendingEvents(t, st); len(evs) != 0 {
			t.Fatalf("%d events after malformed requests, want 0", len(evs))
		}
	})
}
