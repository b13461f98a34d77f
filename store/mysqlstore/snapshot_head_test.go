package mysqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/mysqlstore"
	"github.com/hubsync/hubsync/store/storetest"
)

// TestClaimHeadCheckSeesEventsCommittedDuringClaim: a record's two events,
// enqueued (each committed in its own transaction, in order) while a claim
// statement is scanning a backlog of blocked events, must come out of that
// claim as one head with its follower, never as two heads (the second
// handed out twice) nor the second alone. The claim's head check (template
// "unblocked") is a non-locking read of the statement's snapshot, while the
// candidate itself is read by the locking read in its latest version: a
// candidate committed after the snapshot is checked against a past in which
// its record's earlier events did not exist yet.
func TestClaimHeadCheckSeesEventsCommittedDuringClaim(t *testing.T) {
	m := dbtest.Migrated(t, store.MySQL)
	var clock atomic.Int64
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return base.Add(time.Duration(clock.Load())) }
	s, err := mysqlstore.New(m.DB, store.Config{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A backlog the claim walks before it reaches new events: one record of
	// 3,000 events whose head is leased, so the rest are blocked.
	if err := storetest.FillOutboundRecords(ctx, s, "hubspot", "fill", 3000, 1, base.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	held, err := s.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: 1, MaxPerRecord: 1, LeaseDuration: time.Hour, Owner: "holder"})
	if err != nil || len(held) != 1 {
		t.Fatalf("claim of the backlog's head: %v, %v", held, err)
	}
	start := time.Now()
	if evs, err := s.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: 10, LeaseDuration: time.Minute, Owner: "probe"}); err != nil || len(evs) != 0 {
		t.Fatalf("probe claim: %v, %v", evs, err)
	}
	scan := time.Since(start)
	t.Logf("a claim over the blocked backlog takes %s", scan)
	rng := rand.New(rand.NewPCG(1, 2))
	var dup, alone int
	defer func() {
		t.Logf("%d claims returned an event twice, %d a record's second event without its first", dup, alone)
	}()
	for i := range 40 {
		rec := fmt.Sprintf("new-%d", i)
		type result struct {
			evs []store.OutboundEvent
			err error
		}
		done := make(chan result, 2)
		for _, owner := range []string{"a", "b"} {
			go func() {
				evs, err := s.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: 10, LeaseDuration: time.Minute, Owner: owner})
				done <- result{evs, err}
			}()
		}
		// Not a wait for a condition: a random offset into the claims' scan,
		// so that the enqueues land at different points of it across the
		// rounds (before the fix, 9 of 40 rounds went wrong).
		time.Sleep(time.Duration(rng.Int64N(int64(scan))))
		var ids []string
		for range 2 {
			res, err := s.Outbound().Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: rec,
				EventType: "update", Payload: json.RawMessage(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, res.ID)
		}
		for range 2 {
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			var got []string
			owner := ""
			for _, ev := range r.evs {
				got = append(got, ev.ID)
				owner = ev.LeaseOwner
			}
			switch {
			case len(got) == 0, len(got) == 1 && got[0] == ids[0], len(got) == 2 && got[0] == ids[0] && got[1] == ids[1]:
			case len(got) == 3:
				dup++
				t.Errorf("iteration %d: record %s's events %v (in order) were committed while claims ran; claimer %s got %v: the second twice", i, rec, ids, owner, got)
			default:
				alone++
				t.Errorf("iteration %d: record %s's events %v (in order) were committed while claims ran; claimer %s got %v, without the record's first event", i, rec, ids, owner, got)
			}
		}
		// Finish the record so that the next iteration starts alike.
		if _, err := m.DB.ExecContext(ctx, "UPDATE _System_IntegrationOutbound SET Status = 'processed', ProcessedDate = CreatedDate, LeaseExpiresDate = NULL WHERE RecordID = ?", rec); err != nil {
			t.Fatal(err)
		}
		clock.Add(int64(time.Millisecond))
	}
}
