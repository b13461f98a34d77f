package subscriptions_test

import (
	"context"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/subscriptions"
)

// TestSubmitAndSettleRunAgainAfterADeadlock: a request's transaction that
// the database rolled back as a deadlock runs again, instead of answering the
// client with an error for a request it can simply store.
func TestSubmitAndSettleRunAgainAfterADeadlock(t *testing.T) {
	ctx := context.Background()
	for _, d := range []store.Dialect{store.Postgres, store.MySQL} {
		t.Run(dbtest.Name(d), func(t *testing.T) {
			t.Run("Submit", func(t *testing.T) {
				st, s := newStore(t, d)
				fired := dbtest.FailOnce(t, st.DB(), d, "subscription_requests", "INSERT", 1)
				res, err := s.Submit(ctx, req("ada@example.com", "subscribed"), "k1", 1)
				if err != nil || res.Replayed || res.AppliedSequence != 1 {
					t.Fatalf("Submit after one injected deadlock = %+v, %v; want stored, sequence 1", res, err)
				}
				if n := fired(); n < 2 {
					t.Errorf("the insert ran %d times; want the deadlocked try and a retry", n)
				}
				if evs := pendingEvents(t, st); len(evs) != 1 {
					t.Errorf("%d outbound events after the retried Submit; want 1", len(evs))
				}
			})
			t.Run("Settle", func(t *testing.T) {
				st, s := newStore(t, d)
				res, err := s.Submit(ctx, req("ada@example.com", "subscribed"), "k1", 1)
				if err != nil {
					t.Fatal(err)
				}
				fired := dbtest.FailOnce(t, st.DB(), d, "contact_subscription_state", "INSERT", 1)
				advanced, err := s.Settle(ctx, res.Stored, subscriptions.StatusSynced, "")
				if err != nil || !advanced {
					t.Fatalf("Settle after one injected deadlock = %v, %v; want advanced", advanced, err)
				}
				if n := fired(); n < 2 {
					t.Errorf("the state insert ran %d times; want the deadlocked try and a retry", n)
				}
			})
		})
	}
}
