package subscriptions_test

import (
	"net/http"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/subscriptions"
)

// TestReplayAfterMappingChange: a retry of an accepted request (same
// Idempotency-Key, same body) answers the original request (200, same id)
// even when its (brand, product) left the mapping after it was accepted (a
// restart with an edited mapping file): the request is stored and its event
// queued, so a 422 would tell the client a lie. A new key for the unmapped
// pair is still a 422, and the old key with another body a 409.
func TestReplayAfterMappingChange(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		st, s := newStore(t, d)
		h1, err := subscriptions.NewHandler(subscriptions.HandlerConfig{Store: s, Mapping: testMapping(t)})
		if err != nil {
			t.Fatal(err)
		}
		const body = `{"brand_id":"acme","product_id":"news","contact_key":"ada@example.com","desired_state":"unsubscribed"}`
		w, out := do(t, h1, "POST", "/api/subscription-requests", "key-1", body)
		if w.Code != http.StatusCreated {
			t.Fatalf("create = %d %v", w.Code, out)
		}
		id := out["id"]

		// The operator drops acme/news from the mapping and restarts.
		m2, err := mapping.Default().WithSubscriptions(3, mapping.Subscription{BrandID: "acme", ProductID: "offers", SubscriptionID: "2"})
		if err != nil {
			t.Fatal(err)
		}
		h2, err := subscriptions.NewHandler(subscriptions.HandlerConfig{Store: s, Mapping: m2})
		if err != nil {
			t.Fatal(err)
		}
		w, out = do(t, h2, "POST", "/api/subscription-requests", "key-1", body)
		if w.Code != http.StatusOK || out["id"] != id || w.Header().Get(subscriptions.ReplayedHeader) != "true" {
			t.Fatalf("retry of an accepted request = %d %v; want 200 replayed with the original id %v", w.Code, out, id)
		}
		const other = `{"brand_id":"acme","product_id":"news","contact_key":"ada@example.com","desired_state":"subscribed"}`
		if w, out = do(t, h2, "POST", "/api/subscription-requests", "key-1", other); w.Code != http.StatusConflict {
			t.Fatalf("the key with another body = %d %v; want 409", w.Code, out)
		}
		if w, out = do(t, h2, "POST", "/api/subscription-requests", "key-2", body); w.Code != http.StatusUnprocessableEntity {
			t.Fatalf("a new key for the unmapped pair = %d %v; want 422", w.Code, out)
		}
		if n := len(pendingEvents(t, st)); n != 1 {
			t.Fatalf("%d events queued; want the first request's only", n)
		}
	})
}
