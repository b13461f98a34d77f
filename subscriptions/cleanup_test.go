package subscriptions_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/storetest"
	"github.com/hubsync/hubsync/subscriptions"
)

type cleanupBundle struct {
	s     *subscriptions.Store
	clock *storetest.Clock
}

func setupCleanup(t *testing.T, d store.Dialect) cleanupBundle {
	t.Helper()
	db := dbtest.Migrated(t, d)
	clock := storetest.NewClock(time.Time{})
	st, err := hubsync.NewStore(db.DB, d, store.Config{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return cleanupBundle{s: subscriptions.NewStore(st), clock: clock}
}

// submit stores a request of contact under key, a second later than the last.
func (b cleanupBundle) submit(t *testing.T, contact, state, key string) subscriptions.Stored {
	t.Helper()
	b.clock.Advance(time.Second)
	r, err := b.s.Submit(context.Background(), req(contact, state), key, 1)
	if err != nil || r.Replayed {
		t.Fatalf("submit %s %s = %+v, %v", contact, key, r, err)
	}
	return r.Stored
}

// settle settles r with status, a second later than the last change.
func (b cleanupBundle) settle(t *testing.T, r subscriptions.Stored, status string) {
	t.Helper()
	b.clock.Advance(time.Second)
	if _, err := b.s.Settle(context.Background(), r, status, ""); err != nil {
		t.Fatal(err)
	}
}

// present reports which of ids Get still finds.
func (b cleanupBundle) present(t *testing.T, ids map[string]string) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for name, id := range ids {
		_, err := b.s.Get(context.Background(), id)
		switch {
		case err == nil:
			got[name] = true
		case !errors.Is(err, subscriptions.ErrNotFound):
			t.Fatalf("Get %s: %v", name, err)
		}
	}
	return got
}

// TestCleanupKeepsNewestPendingAndFailed: Cleanup deletes the requests
// settled for good (synced or superseded) past the retention that are not
// their contact's newest, in batches of one, and keeps every other.
func TestCleanupKeepsNewestPendingAndFailed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setupCleanup(t, d)
		ctx := context.Background()
		ids := map[string]string{}
		// ada: three requests, the newest synced; the two older ones are
		// superseded by one Settle, at one instant (a tie the batches must
		// step through by id).
		a1 := b.submit(t, "ada@example.com", "subscribed", "a1")
		a2 := b.submit(t, "ada@example.com", "unsubscribed", "a2")
		a3 := b.submit(t, "ada@example.com", "subscribed", "a3")
		b.settle(t, a3, subscriptions.StatusSynced)
		ids["ada superseded 1"], ids["ada superseded 2"], ids["ada newest synced"] = a1.ID, a2.ID, a3.ID
		// bob: a synced request and a newer synced one; the older stays
		// synced (only pending and failed ones are superseded).
		b1 := b.submit(t, "bob@example.com", "subscribed", "b1")
		b.settle(t, b1, subscriptions.StatusSynced)
		b2 := b.submit(t, "bob@example.com", "unsubscribed", "b2")
		b.settle(t, b2, subscriptions.StatusSynced)
		ids["bob older synced"], ids["bob newest synced"] = b1.ID, b2.ID
		// cy: one request, synced long ago: the newest, kept.
		c1 := b.submit(t, "cy@example.com", "subscribed", "c1")
		b.settle(t, c1, subscriptions.StatusSynced)
		ids["cy only synced"] = c1.ID
		// dee: an older failed request and an older pending one, neither
		// final, and a newest pending one.
		d1 := b.submit(t, "dee@example.com", "subscribed", "d1")
		if err := b.s.SetStatus(ctx, d1.ID, subscriptions.StatusFailed, "opted out"); err != nil {
			t.Fatal(err)
		}
		d2 := b.submit(t, "dee@example.com", "unsubscribed", "d2")
		d3 := b.submit(t, "dee@example.com", "subscribed", "d3")
		ids["dee older failed"], ids["dee older pending"], ids["dee newest pending"] = d1.ID, d2.ID, d3.ID

		b.clock.Advance(31 * 24 * time.Hour)
		// eve: superseded and synced within the retention.
		e1 := b.submit(t, "eve@example.com", "subscribed", "e1")
		e2 := b.submit(t, "eve@example.com", "unsubscribed", "e2")
		b.settle(t, e2, subscriptions.StatusSynced)
		ids["eve recent superseded"], ids["eve newest synced"] = e1.ID, e2.ID

		cutoff := b.clock.Now().Add(-30 * 24 * time.Hour)
		n, err := b.s.Cleanup(ctx, cutoff, 1)
		if err != nil || n != 3 {
			t.Fatalf("Cleanup with batches of 1 = %d, %v; want the 3 old settled requests that are not their contact's newest", n, err)
		}
		got := b.present(t, ids)
		for name := range ids {
			deleted := name == "ada superseded 1" || name == "ada superseded 2" || name == "bob older synced"
			if got[name] == deleted {
				t.Errorf("%s: present %v, want %v", name, got[name], !deleted)
			}
		}
		if n, err := b.s.Cleanup(ctx, cutoff, 1); err != nil || n != 0 {
			t.Errorf("second Cleanup = %d, %v; want nothing left to delete", n, err)
		}
		// The pusher reads the newest of a contact: still there.
		if newest, err := b.s.Newest(ctx, "acme", "news", "ada@example.com"); err != nil || newest.ID != a3.ID {
			t.Errorf("Newest of ada = %+v, %v; want %s", newest, err, a3.ID)
		}
		// A retry under a deleted request's key is a new request.
		again, err := b.s.Submit(ctx, req("ada@example.com", "subscribed"), "a1", 1)
		if err != nil || again.Replayed || again.ID == a1.ID || again.AppliedSequence != 4 {
			t.Errorf("retry of a deleted request = %+v, %v; want a new request at sequence 4", again, err)
		}
	})
}

// TestCleanupBatchesPastKeptRequests: with the newest requests of many
// contacts among the old ones and batches smaller than what is to delete,
// Cleanup deletes every old superseded and synced request but the newest.
func TestCleanupBatchesPastKeptRequests(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setupCleanup(t, d)
		ctx := context.Background()
		const contacts = 7
		var keep, drop []string
		for i := range contacts {
			contact := fmt.Sprintf("c%d@example.com", i)
			var rs []subscriptions.Stored
			for j := range i%3 + 1 {
				rs = append(rs, b.submit(t, contact, "subscribed", fmt.Sprintf("k%d-%d", i, j)))
			}
			// Every other contact's older requests are synced one by one;
			// the others' are superseded by the newest's Settle.
			for _, r := range rs[:len(rs)-1] {
				if i%2 == 0 {
					b.settle(t, r, subscriptions.StatusSynced)
				}
				drop = append(drop, r.ID)
			}
			b.settle(t, rs[len(rs)-1], subscriptions.StatusSynced)
			keep = append(keep, rs[len(rs)-1].ID)
		}
		b.clock.Advance(40 * 24 * time.Hour)
		n, err := b.s.Cleanup(ctx, b.clock.Now().Add(-30*24*time.Hour), 2)
		if err != nil || n != int64(len(drop)) {
			t.Fatalf("Cleanup with batches of 2 = %d, %v; want %d", n, err, len(drop))
		}
		for _, id := range drop {
			if _, err := b.s.Get(ctx, id); !errors.Is(err, subscriptions.ErrNotFound) {
				t.Errorf("old settled request %s: Get = %v, want ErrNotFound", id, err)
			}
		}
		for _, id := range keep {
			if _, err := b.s.Get(ctx, id); err != nil {
				t.Errorf("newest request %s: %v", id, err)
			}
		}
	})
}
