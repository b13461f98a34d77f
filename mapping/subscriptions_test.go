package mapping

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSubscriptions(t *testing.T) {
	const objects = "objects:\n  contacts:\n    fields:\n      email: email\n"
	s, err := Parse([]byte(objects + `subscriptions_version: 3
subscriptions:
  - {brand_id: acme, product_id: news, subscription_id: "12"}
  - {brand_id: acme, product_id: offers, subscription_id: 13, business_unit_id: "0"}
`))
	if err != nil {
		t.Fatal(err)
	}
	if s.SubscriptionsVersion() != 3 || len(s.Subscriptions()) != 2 {
		t.Fatalf("version %d, %d subscriptions", s.SubscriptionsVersion(), len(s.Subscriptions()))
	}
	if sub, ok := s.Subscription("acme", "offers"); !ok || sub.SubscriptionID != "13" || sub.BusinessUnitID != "0" {
		t.Fatalf("Subscription(acme, offers) = %+v, %v", sub, ok)
	}
	if _, ok := s.Subscription("acme", "sports"); ok {
		t.Fatal("an unmapped pair was found")
	}
	for _, other := range []string{"7", "07"} { // HubSpot reads 07 as 7
		if _, err := Default().WithSubscriptions(1, Subscription{BrandID: "a", ProductID: "b", SubscriptionID: "7"}, Subscription{BrandID: "a", ProductID: "c", SubscriptionID: other}); err == nil || !strings.Contains(err.Error(), "as a/b does") {
			t.Errorf("WithSubscriptions with subscriptions 7 and %s for two pairs = %v; want a refusal naming both", other, err)
		}
	}
	if d := Default(); d.SubscriptionsVersion() != 1 || len(d.Subscriptions()) != 0 {
		t.Fatal("the default mapping has subscriptions")
	}
	for _, tc := range []struct{ yaml, want string }{
		{"subscriptions:\n  - {brand_id: a, product_id: b}\n", "line 6: a subscription needs brand_id, product_id and subscription_id"},
		{"subscriptions:\n  - {brand_id: a, product_id: b, subscription_id: x1}\n", "is not a HubSpot subscription id"},
		{"subscriptions:\n  - {brand_id: a, product_id: b, subscription_id: 1}\n  - {brand_id: a, product_id: b, subscription_id: 2}\n", "already mapped on line 6"},
		{"subscriptions:\n  - {brand_id: a, product_id: b, subscription_id: 1, brand: x}\n", `unknown key "brand"`},
		{"subscriptions:\n  - {brand_id: a, product_id: b, subscription_id: 7}\n  - {brand_id: a, product_id: c, subscription_id: \"7\"}\n", "line 7: subscription a/c maps to HubSpot subscription 7, as a/b does"},
		{"subscriptions:\n  - {brand_id: a, product_id: b, subscription_id: 7}\n  - {brand_id: a, product_id: c, subscription_id: \"007\"}\n", "line 7: subscription a/c maps to HubSpot subscription 007, as a/b does"},
		{"subscriptions_version: 0\n", "subscriptions_version \"0\" is not a positive integer"},
		{"subscriptions: {a: b}\n", "subscriptions must be a list"},
	} {
		_, err := Parse([]byte(objects + tc.yaml))
		if !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v; want an error containing %q", tc.yaml, err, tc.want)
		}
	}
}
