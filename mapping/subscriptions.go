package mapping

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Subscription maps one (brand, product) pair of the application to a
// HubSpot subscription type (a communication preference).
type Subscription struct {
	// BrandID and ProductID are the application's names, as the
	// subscription-requests API receives them.
	BrandID   string
	ProductID string
	// SubscriptionID is HubSpot's subscription type id (numeric).
	SubscriptionID string
	// BusinessUnitID is the HubSpot business unit (brand) the subscription
	// type belongs to; "" is the default unit.
	BusinessUnitID string
}

// subscriptionKey is the lookup key of a Subscription.
type subscriptionKey struct{ brand, product string }

// subscriptionID is a HubSpot subscription type or business unit id.
var subscriptionID = regexp.MustCompile(`^[0-9]+$`)

// WithSubscriptions returns a copy of s that also maps subscriptions, under
// mapping version version (stored on every subscription request, so a
// request can be traced to the mapping it was accepted under; raise it when
// an entry changes meaning). Each (BrandID, ProductID) may appear once.
func (s *Set) WithSubscriptions(version int, subs ...Subscription) (*Set, error) {
	if version < 1 {
		return nil, fmt.Errorf("mapping: subscriptions version %d is not positive; use 1 or more", version)
	}
	out := *s
	out.subsVersion = version
	out.subs = make(map[subscriptionKey]Subscription, len(subs))
	byID := map[string]subscriptionKey{}
	var errs []error
	for _, sub := range subs {
		k := subscriptionKey{sub.BrandID, sub.ProductID}
		switch {
		case sub.BrandID == "" || sub.ProductID == "":
			errs = append(errs, fmt.Errorf("mapping: subscription %+v needs a brand_id and a product_id", sub))
		case !subscriptionID.MatchString(sub.SubscriptionID):
			errs = append(errs, fmt.Errorf("mapping: subscription %s/%s: subscription_id %q is not a HubSpot subscription id (digits)", sub.BrandID, sub.ProductID, sub.SubscriptionID))
		case sub.BusinessUnitID != "" && !subscriptionID.MatchString(sub.BusinessUnitID):
			errs = append(errs, fmt.Errorf("mapping: subscription %s/%s: business_unit_id %q is not a HubSpot business unit id (digits)", sub.BrandID, sub.ProductID, sub.BusinessUnitID))
		default:
			if _, dup := out.subs[k]; dup {
				errs = append(errs, fmt.Errorf("mapping: subscription %s/%s is mapped twice; keep one", sub.BrandID, sub.ProductID))
			}
			if other, shared := byID[numericID(sub.SubscriptionID)]; shared && other != k {
				errs = append(errs, sharedSubscriptionError(sub, other))
			}
			byID[numericID(sub.SubscriptionID)] = k
			out.subs[k] = sub
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &out, nil
}

// Subscription returns the HubSpot subscription of a (brand, product) pair.
func (s *Set) Subscription(brandID, productID string) (Subscription, bool) {
	sub, ok := s.subs[subscriptionKey{brandID, productID}]
	return sub, ok
}

// Subscriptions lists the mapped subscriptions, by brand then product.
func (s *Set) Subscriptions() []Subscription {
	out := make([]Subscription, 0, len(s.subs))
	for _, sub := range s.subs {
		out = append(out, sub)
	}
	slices.SortFunc(out, func(a, b Subscription) int {
		return strings.Compare(a.BrandID+"\x00"+a.ProductID, b.BrandID+"\x00"+b.ProductID)
	})
	return out
}

// SubscriptionsVersion is the version of the subscriptions mapping: 1 unless
// the file (subscriptions_version) or WithSubscriptions says otherwise.
func (s *Set) SubscriptionsVersion() int { return max(s.subsVersion, 1) }

var subscriptionKeys = []string{"brand_id", "product_id", "subscription_id", "business_unit_id"}

// subscriptions parses the file's subscriptions: list.
func (p *fileParser) subscriptions(n *yaml.Node) []Subscription {
	n = deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		line := 0
		if n != nil {
			line = n.Line
		}
		p.errs = append(p.errs, fmt.Errorf("line %d: subscriptions must be a list of {brand_id, product_id, subscription_id}", line))
		return nil
	}
	seen := map[subscriptionKey]int{}
	seenID := map[string]struct {
		key  subscriptionKey
		line int
	}{}
	var out []Subscription
	for _, item := range n.Content {
		item = deref(item)
		var sub Subscription
		for _, kv := range p.entries(item, "a subscription") {
			k, v := kv[0], kv[1]
			var dst *string
			switch k.Value {
			case "brand_id":
				dst = &sub.BrandID
			case "product_id":
				dst = &sub.ProductID
			case "subscription_id":
				dst = &sub.SubscriptionID
			case "business_unit_id":
				dst = &sub.BusinessUnitID
			default:
				p.errorf(k, "subscriptions: unknown key %q; use one of %s", k.Value, strings.Join(subscriptionKeys, ", "))
				continue
			}
			if s, ok := p.scalar(v, "subscriptions: "+k.Value); ok {
				*dst = s
			}
		}
		switch {
		case sub.BrandID == "" || sub.ProductID == "" || sub.SubscriptionID == "":
			p.errorf(item, "a subscription needs brand_id, product_id and subscription_id")
			continue
		case !subscriptionID.MatchString(sub.SubscriptionID):
			p.errorf(item, "subscription %s/%s: subscription_id %q is not a HubSpot subscription id; use the numeric id GET /communication-preferences/v3/definitions lists", sub.BrandID, sub.ProductID, sub.SubscriptionID)
			continue
		case sub.BusinessUnitID != "" && !subscriptionID.MatchString(sub.BusinessUnitID):
			p.errorf(item, "subscription %s/%s: business_unit_id %q is not a HubSpot business unit id (digits)", sub.BrandID, sub.ProductID, sub.BusinessUnitID)
			continue
		}
		k := subscriptionKey{sub.BrandID, sub.ProductID}
		if first, dup := seen[k]; dup {
			p.errorf(item, "subscription %s/%s is already mapped on line %d; map each brand and product once", sub.BrandID, sub.ProductID, first)
			continue
		}
		if other, shared := seenID[numericID(sub.SubscriptionID)]; shared {
			p.errorf(item, "%s (line %d)", strings.TrimPrefix(sharedSubscriptionError(sub, other.key).Error(), "mapping: "), other.line)
			continue
		}
		seen[k] = item.Line
		seenID[numericID(sub.SubscriptionID)] = struct {
			key  subscriptionKey
			line int
		}{k, item.Line}
		out = append(out, sub)
	}
	return out
}

// numericID is a numeric id without leading zeros, as HubSpot reads it:
// "07" and "7" name one subscription.
func numericID(id string) string {
	if t := strings.TrimLeft(id, "0"); t != "" {
		return t
	}
	return "0"
}

// sharedSubscriptionError refuses a HubSpot subscription mapped by two
// (brand, product) pairs: HubSpot holds one status per contact and
// subscription, and the two pairs' requests are ordered each on its own, so
// the status HubSpot ends with would be whichever push came last.
func sharedSubscriptionError(sub Subscription, other subscriptionKey) error {
	return fmt.Errorf("mapping: subscription %s/%s maps to HubSpot subscription %s, as %s/%s does: HubSpot keeps one status per contact and subscription, which the two would overwrite in no set order; map each brand and product to a subscription of its own",
		sub.BrandID, sub.ProductID, sub.SubscriptionID, other.brand, other.product)
}

// subscriptionsVersion parses subscriptions_version.
func (p *fileParser) subscriptionsVersion(v *yaml.Node) int {
	n, err := strconv.Atoi(v.Value)
	if v.Kind != yaml.ScalarNode || err != nil || n < 1 {
		p.errorf(v, "subscriptions_version %q is not a positive integer; write e.g. subscriptions_version: 1", v.Value)
		return 1
	}
	return n
}
