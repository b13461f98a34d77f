package hubspot_test

import (
	"context"
	"testing"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
)

// TestCommPrefsFailures: each documented error of v3 subscribe/unsubscribe
// is told apart by CommPrefsFailureOf.
func TestCommPrefsFailures(t *testing.T) {
	ctx := context.Background()
	c, sim := simClient(t, hubspotsim.Config{CommPrefsRequireContact: true})
	if _, err := sim.UserCreate("contacts", map[string]string{"email": "known@example.com"}); err != nil {
		t.Fatal(err)
	}
	in := hubspot.SubscribeInput{EmailAddress: "known@example.com", SubscriptionID: "1"}
	if _, err := c.Subscribe(ctx, in); err != nil {
		t.Fatalf("first subscribe: %v", err)
	}
	statuses, err := c.GetSubscriptionStatusV3(ctx, "known@example.com")
	if err != nil || len(statuses) == 0 || statuses[0].Status != "SUBSCRIBED" {
		t.Fatalf("status = %+v, %v", statuses, err)
	}
	_, err = c.Subscribe(ctx, in)
	if got := hubspot.CommPrefsFailureOf(err); got != hubspot.CommPrefsAlreadyInState {
		t.Fatalf("second subscribe: %v classified %d, want already in state", err, got)
	}
	_, err = c.Subscribe(ctx, hubspot.SubscribeInput{EmailAddress: "known@example.com", SubscriptionID: "999"})
	if got := hubspot.CommPrefsFailureOf(err); got != hubspot.CommPrefsInvalidSubscription {
		t.Fatalf("unknown subscription: %v classified %d, want invalid subscription", err, got)
	}
	_, err = c.Subscribe(ctx, hubspot.SubscribeInput{EmailAddress: "stranger@example.com", SubscriptionID: "1"})
	if got := hubspot.CommPrefsFailureOf(err); got != hubspot.CommPrefsContactUnknown {
		t.Fatalf("unknown contact: %v classified %d, want contact unknown", err, got)
	}
	sim.OptOutOfAllEmail("known@example.com")
	_, err = c.Subscribe(ctx, hubspot.SubscribeInput{EmailAddress: "known@example.com", SubscriptionID: "2"})
	if got := hubspot.CommPrefsFailureOf(err); got != hubspot.CommPrefsOptedOut {
		t.Fatalf("opted out: %v classified %d, want opted out", err, got)
	}
	_, err = c.Unsubscribe(ctx, in)
	if got := hubspot.CommPrefsFailureOf(err); got != hubspot.CommPrefsAlreadyInState {
		t.Fatalf("unsubscribe after opt-out: %v classified %d, want already in state", err, got)
	}
	if got := hubspot.CommPrefsFailureOf(nil); got != hubspot.CommPrefsOther {
		t.Fatalf("nil classified %d", got)
	}
}
