package budget

import (
	"context"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
)

// The response hook observes a call's grant with the call's first answer
// only, and only for its own key: an answer of a call made under a 3-call
// grant frees one call's room sooner, a second answer in the same context
// (or an answer for another key's hook) moves nothing.
func TestObserveHubSpotAnswersOneCallOfItsGrant(t *testing.T) {
	clock := newClock()
	b, err := NewMemory(Config{Limit: 3, DailyLimit: -1, RetrySpread: -1, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	g, err := b.Reserve(ctx, "k", 3)
	if err != nil || !g.Granted {
		t.Fatalf("Reserve = %+v, %v; want granted", g, err)
	}
	// Without rate-limit headers (a search, a 5xx without them), the answer
	// still counts the call from now.
	answer := hubspot.Response{StatusCode: 200}
	clock.Advance(50 * time.Millisecond)
	call := WithCall(ctx, "k", g)
	ObserveHubSpot(b, "other", nil)(call, answer) // another key's hook: not its grant
	ObserveHubSpot(b, "k", nil)(call, answer)
	ObserveHubSpot(b, "k", nil)(call, answer) // the same call answered twice: once
	ObserveHubSpot(b, "k", nil)(ctx, answer)  // a call made under no grant
	// One call leaves at 10.1 s (answered), two at 10.3 s (the grant's
	// Window + CallLead, plus the bucket).
	clock.Advance(WindowDefault + 50*time.Millisecond)
	if r, _ := b.Reserve(ctx, "k", 1); !r.Granted {
		t.Fatalf("at 10.1 s: Reserve(1) refused (RetryAfter %s); want the answered call's room", r.RetryAfter)
	}
	if r, _ := b.Reserve(ctx, "k", 1); r.Granted || r.RetryAfter != 200*time.Millisecond {
		t.Fatalf("at 10.1 s: second Reserve(1) = %+v; want refused for 200ms (one answer observed, not two)", r)
	}
	if ctx := WithCall(ctx, "k", Reservation{}); ctx.Value(callKey{}) != nil {
		t.Fatal("WithCall with a refused grant marked the context")
	}
}
