package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/hubsync/hubsync/store"
)

// testClaimIDsFollowers checks that ClaimIDs of a record's head hands out the
// record's due followers with it, as Claim does (push dispatch coalesces a
// record's changes), in Lane order, up to MaxPerRecord, stopping at the first
// follower that is not due; and that no other claim gets any of them while
// they are out.
func testClaimIDsFollowers(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	claimIDs := func(owner string, perRecord int, ids ...string) []item {
		t.Helper()
		got, err := q.claimIDs(ctx, ids, store.ClaimParams{Key: keyDefault, LeaseDuration: minute, Owner: owner, MaxPerRecord: perRecord})
		if err != nil {
			t.Fatalf("ClaimIDs(%v, MaxPerRecord %d): %v", ids, perRecord, err)
		}
		return got
	}

	a1 := q.mustEnqueue(t, spec{Record: "A"})
	b1 := q.mustEnqueue(t, spec{Record: "B"})
	a2 := q.mustEnqueue(t, spec{Record: "A"})
	a3 := q.mustEnqueue(t, spec{Record: "A"})
	got := claimIDs("push", 0, a1)
	wantIDs(t, "ClaimIDs(A1), default MaxPerRecord: A's head with its due followers, in order", got, a1, a2, a3)
	for _, it := range got {
		if it.Status != store.StatusProcessing || it.Attempt != 1 || it.LeaseOwner != "push" {
			t.Errorf("ClaimIDs handed out %v owner %q, want processing, attempt 1, owner push like the head", it, it.LeaseOwner)
		}
	}
	if it := q.mustGet(t, b1); it.Status != store.StatusPending {
		t.Errorf("ClaimIDs(A1) changed %v of another record", it)
	}
	wantIDs(t, "ClaimIDs of A's head and followers again while they are out", claimIDs("push2", 0, a1, a2, a3))
	wantIDs(t, "claim while A is out: only B", q.mustClaim(t, 10, minute, "w2"), b1)
	if err := q.Complete(ctx, leases(got)...); err != nil {
		t.Fatal(err)
	}

	// MaxPerRecord caps the record's events, head included.
	c1 := q.mustEnqueue(t, spec{Record: "C"})
	c2 := q.mustEnqueue(t, spec{Record: "C"})
	c3 := q.mustEnqueue(t, spec{Record: "C"})
	got = claimIDs("push", 2, c1)
	wantIDs(t, "ClaimIDs(C1), MaxPerRecord 2", got, c1, c2)
	// Naming the head and a follower hands each out once.
	if err := q.Release(ctx, 0, leases(got)...); err != nil {
		t.Fatal(err)
	}
	got = claimIDs("push", 0, c3, c1, c2)
	wantIDs(t, "ClaimIDs(C3, C1, C2): each once, in Lane order", got, c1, c2, c3)

	// A follower that is not due stops its record: the ones behind it wait.
	if err := q.Release(ctx, 0, got[0].lease(), got[2].lease()); err != nil {
		t.Fatal(err)
	}
	if err := q.Release(ctx, time.Hour, got[1].lease()); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "ClaimIDs(C1) while C2 waits an hour: C1 only, C3 waits behind C2", claimIDs("push", 0, c1), c1)
	wantIDs(t, "ClaimIDs(C3) while C1 is leased and C2 waits", claimIDs("push", 0, c3))
}
