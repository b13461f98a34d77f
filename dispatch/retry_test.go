package dispatch

import (
	"context"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// TestPublishClaimRunsAgainAfterADeadlock: on MySQL the publisher's claim is
// a transaction (lock, then take each event); rolled back by the database as
// a deadlock after it took the first event, it runs again from the start and
// returns each event once.
func TestPublishClaimRunsAgainAfterADeadlock(t *testing.T) {
	b := setup(t, store.MySQL, options{})
	ctx := context.Background()
	b.insert(t, "a@example.com")
	b.insert(t, "b@example.com")
	fired := dbtest.FailOnce(t, b.st.DB(), store.MySQL, "_System_IntegrationOutbound", "UPDATE", 2)
	s, err := b.pub.RunOnce(ctx)
	if err != nil || s.Claimed != 2 || s.Published != 2 {
		t.Fatalf("RunOnce after one injected deadlock = %+v, %v; want 2 claimed and published", s, err)
	}
	if n := fired(); n < 4 {
		t.Errorf("the claim's update ran %d times; want the first take, the deadlocked second and a retry of both", n)
	}
	if pubs := b.qs.published(); len(pubs) != 2 {
		t.Errorf("%d publishes; want 2, one per event", len(pubs))
	}
}
