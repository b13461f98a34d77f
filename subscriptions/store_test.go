package subscriptions_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/subscriptions"
)

func newStore(t *testing.T, d store.Dialect) (store.Store, *subscriptions.Store) {
	t.Helper()
	db := dbtest.Migrated(t, d)
	st, err := hubsync.NewStore(db.DB, d, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return st, subscriptions.NewStore(st)
}

func req(contact, state string) subscriptions.Request {
	return subscriptions.Request{BrandID: "acme", ProductID: "news", ContactKey: contact, DesiredState: state}
}

func pendingEvents(t *testing.T, st store.Store) []store.OutboundEvent {
	t.Helper()
	evs, err := st.Outbound().GetPending(context.Background(), "hubspot", 1000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestStoreConformance runs the store's contract on every database.
func TestStoreConformance(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		t.Run("submit replay conflict", func(t *testing.T) {
			st, s := newStore(t, d)
			first, err := s.Submit(ctx, req("ada@example.com", "subscribed"), "k1", 3)
			if err != nil || first.Replayed || first.AppliedSequence != 1 || first.SyncStatus != subscriptions.StatusPending {
				t.Fatalf("first submit = %+v, %v", first, err)
			}
			again, err := s.Submit(ctx, req("ada@example.com", "subscribed"), "k1", 3)
			if err != nil || !again.Replayed || again.ID != first.ID || again.AppliedSequence != 1 {
				t.Fatalf("replay = %+v, %v; want the original %s", again, err, first.ID)
			}
			conflict, err := s.Submit(ctx, req("ada@example.com", "unsubscribed"), "k1", 3)
			if !errors.Is(err, subscriptions.ErrConflict) || conflict.ID != first.ID {
				t.Fatalf("conflicting body = %+v, %v; want ErrConflict naming %s", conflict, err, first.ID)
			}
			if n, _ := s.CountRequests(ctx, "acme", "news", "ada@example.com"); n != 1 {
				t.Fatalf("%d requests stored, want 1", n)
			}
			evs := pendingEvents(t, st)
			if len(evs) != 1 || evs[0].ObjectType != subscriptions.ObjectType || evs[0].RecordID != "acme/news/ada@example.com" {
				t.Fatalf("outbound events = %+v; want one subscriptions event", evs)
			}
			// The same key under another product is another request.
			other := req("ada@example.com", "subscribed")
			other.ProductID = "offers"
			o, err := s.Submit(ctx, other, "k1", 3)
			if err != nil || o.Replayed || o.AppliedSequence != 1 {
				t.Fatalf("same key, other product = %+v, %v", o, err)
			}
			// The next request of the contact takes the next sequence.
			second, err := s.Submit(ctx, req("ada@example.com", "unsubscribed"), "k2", 3)
			if err != nil || second.AppliedSequence != 2 {
				t.Fatalf("second request = %+v, %v; want sequence 2", second, err)
			}
			got, err := s.Get(ctx, second.ID)
			if err != nil || got.DesiredState != "unsubscribed" || got.MappingVersion != 3 || got.AppliedSequence != 2 {
				t.Fatalf("Get = %+v, %v", got, err)
			}
			if _, err := s.Get(ctx, "nope"); !errors.Is(err, subscriptions.ErrNotFound) {
				t.Fatalf("Get(unknown) = %v, want ErrNotFound", err)
			}
		})
		t.Run("concurrent retries of one key", func(t *testing.T) {
			st, s := newStore(t, d)
			const n = 8
			ids := make([]string, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					r, err := s.Submit(ctx, req("bob@example.com", "subscribed"), "same-key", 1)
					ids[i], errs[i] = r.ID, err
				})
			}
			wg.Wait()
			for i := range n {
				if errs[i] != nil {
					t.Fatalf("retry %d: %v", i, errs[i])
				}
				if ids[i] != ids[0] {
					t.Fatalf("retry %d answered request %s, retry 0 %s", i, ids[i], ids[0])
				}
			}
			if c, _ := s.CountRequests(ctx, "acme", "news", "bob@example.com"); c != 1 {
				t.Fatalf("%d requests stored, want exactly 1", c)
			}
			if evs := pendingEvents(t, st); len(evs) != 1 {
				t.Fatalf("%d outbound events, want 1", len(evs))
			}
		})
		t.Run("state advances only forward", func(t *testing.T) {
			_, s := newStore(t, d)
			r1, _ := s.Submit(ctx, req("cy@example.com", "subscribed"), "a", 1)
			r2, err := s.Submit(ctx, req("cy@example.com", "unsubscribed"), "b", 1)
			if err != nil {
				t.Fatal(err)
			}
			if adv, err := s.Settle(ctx, r2.Stored, subscriptions.StatusSynced, ""); err != nil || !adv {
				t.Fatalf("settle newest = %v, %v; want advanced", adv, err)
			}
			if adv, err := s.Settle(ctx, r1.Stored, subscriptions.StatusSynced, ""); err != nil || adv {
				t.Fatalf("settle older after newer = %v, %v; want not advanced", adv, err)
			}
			st, err := s.State(ctx, "acme", "news", "cy@example.com")
			if err != nil || st.AppliedSequence != 2 || st.DesiredState != "unsubscribed" {
				t.Fatalf("state = %+v, %v; want sequence 2 unsubscribed", st, err)
			}
			g1, _ := s.Get(ctx, r1.ID)
			g2, _ := s.Get(ctx, r2.ID)
			if g1.SyncStatus != subscriptions.StatusSuperseded || g2.SyncStatus != subscriptions.StatusSynced {
				t.Fatalf("statuses = %s, %s; want superseded, synced", g1.SyncStatus, g2.SyncStatus)
			}
			states, err := s.States(ctx)
			if err != nil || len(states) != 1 {
				t.Fatalf("States = %+v, %v", states, err)
			}
		})
	})
}
