package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/hubsync/hubsync/store"
)

// testRecordFollowers checks that a claim hands out a record's due events
// together, in order, with one lease each, and that no other claimer gets any
// event of that record while they are out.
func testRecordFollowers(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	a1 := q.mustEnqueue(t, spec{Record: "A"})
	b1 := q.mustEnqueue(t, spec{Record: "B"})
	a2 := q.mustEnqueue(t, spec{Record: "A"})
	a3 := q.mustEnqueue(t, spec{Record: "A"})
	c1 := q.mustClaim(t, 1, minute, "w1")
	wantIDs(t, "claim(limit 1 record): A's head with its due followers, in order", c1, a1, a2, a3)
	for _, it := range c1 {
		if it.Status != store.StatusProcessing || it.Attempt != 1 || it.LeaseOwner != "w1" {
			t.Errorf("claimed %v owner %q, want processing, attempt 1, owner w1 like the head", it, it.LeaseOwner)
		}
	}
	c2 := q.mustClaim(t, 10, minute, "w2")
	wantIDs(t, "second claimer while A is out: only B, none of A", c2, b1)
	if q.dir != store.DirectionInternal {
		got, err := q.claimIDsFor(ctx, []string{a2, a3}, minute, "push")
		if err != nil {
			t.Fatal(err)
		}
		wantIDs(t, "ClaimIDs of A's leased followers", got)
	}
	// Completing the head alone leaves the followers leased: still nothing of A.
	if err := q.Complete(ctx, c1[0].lease(), c2[0].lease()); err != nil {
		t.Fatal(err)
	}
	a4 := q.mustEnqueue(t, spec{Record: "A"})
	if got := q.mustClaim(t, 10, minute, "w2"); len(got) != 0 {
		t.Fatalf("claim while A2, A3 are leased got %v, want nothing", got)
	}
	if err := q.Complete(ctx, c1[1].lease(), c1[2].lease()); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "claim after A2, A3 completed", q.mustClaim(t, 10, minute, "w2"), a4)

	// A named follower is not claimable while its head is unfinished.
	if q.dir != store.DirectionInternal {
		d1 := q.mustEnqueue(t, spec{Record: "D"})
		d2 := q.mustEnqueue(t, spec{Record: "D"})
		got, err := q.claimIDsFor(ctx, []string{d2}, minute, "push")
		if err != nil {
			t.Fatal(err)
		}
		wantIDs(t, "ClaimIDs of a follower whose head is pending", got)
		got, err = q.claimIDsFor(ctx, []string{d1, d2}, minute, "push")
		if err != nil {
			t.Fatal(err)
		}
		wantIDs(t, "ClaimIDs of a head and its follower: the head only", got, d1)
	}

	// An expired lease returns the whole group to the next claimer.
	e1 := q.mustEnqueue(t, spec{Record: "E"})
	e2 := q.mustEnqueue(t, spec{Record: "E"})
	first := q.mustClaim(t, 10, 30*time.Second, "w1")
	wantIDs(t, "claim of E1, E2", first, e1, e2)
	b.clock.Advance(31 * time.Second)
	again := q.mustClaim(t, 10, 30*time.Second, "w2")
	wantIDs(t, "re-claim of E1, E2 after their lease expired", again, e1, e2)
	for _, it := range again {
		if it.Attempt != 2 || it.LeaseOwner != "w2" {
			t.Errorf("re-claimed %v owner %q, want attempt 2, owner w2", it, it.LeaseOwner)
		}
	}

	// A dead letter does not block the events behind it.
	f1 := q.mustEnqueue(t, spec{Record: "F"})
	f2 := q.mustEnqueue(t, spec{Record: "F"})
	f3 := q.mustEnqueue(t, spec{Record: "F"})
	c := q.mustClaimP(t, store.ClaimParams{Key: keyDefault, Limit: 10, LeaseDuration: minute, Owner: "w1", MaxPerRecord: 1})
	wantIDs(t, "claim of F with MaxPerRecord 1", c, f1)
	if err := q.Fail(ctx, c[0].lease(), "permanent"); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "claim after F1 failed", q.mustClaim(t, 10, minute, "w1"), f2, f3)
}

// testFollowerBackoffBlocks checks that a follower that is not due stops its
// record's group there, and that a head in backoff holds back the whole record.
func testFollowerBackoffBlocks(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	a1 := q.mustEnqueue(t, spec{Record: "A"})
	a2 := q.mustEnqueue(t, spec{Record: "A"})
	a3 := q.mustEnqueue(t, spec{Record: "A"})
	c := q.mustClaim(t, 10, minute, "w1")
	wantIDs(t, "claim of A1..A3", c, a1, a2, a3)
	res, err := q.IncrementRetry(ctx, c[1].lease(), "HubSpot 500", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Release(ctx, 0, c[0].lease(), c[2].lease()); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "claim while A2 waits in backoff: A1 only, A3 waits behind A2", q.mustClaim(t, 10, minute, "w1"), a1)
	b.clock.Set(res.NextAttemptDate.Add(time.Millisecond))
	if got := q.mustClaim(t, 10, minute, "w2"); len(got) != 0 {
		t.Fatalf("claim while A1 is leased got %v, want nothing", got)
	}
	b.clock.Advance(minute) // A1's lease expires
	c = q.mustClaim(t, 10, minute, "w2")
	wantIDs(t, "claim after the backoff and A1's expiry: the whole group", c, a1, a2, a3)

	// A head in backoff holds back its due followers.
	h1 := q.mustEnqueue(t, spec{Record: "H"})
	h2 := q.mustEnqueue(t, spec{Record: "H"})
	c = q.mustClaimP(t, store.ClaimParams{Key: keyDefault, Limit: 10, LeaseDuration: minute, Owner: "w1", MaxPerRecord: 1})
	wantIDs(t, "claim of H1 alone", c, h1)
	res, err = q.IncrementRetry(ctx, c[0].lease(), "HubSpot 502", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := q.mustClaim(t, 10, minute, "w1"); len(got) != 0 {
		t.Fatalf("claim while H1 waits in backoff until %s got %v; H2 must wait behind it", res.NextAttemptDate, got)
	}
	b.clock.Set(res.NextAttemptDate.Add(time.Millisecond))
	wantIDs(t, "claim after H1's backoff", q.mustClaim(t, 10, minute, "w1"), h1, h2)
}

// testMaxPerRecord checks the per-record cap and that Limit counts records.
func testMaxPerRecord(t *testing.T, b *bundle) {
	q := b.q
	var a, r []string
	for range 5 {
		a = append(a, q.mustEnqueue(t, spec{Record: "A"}))
	}
	for range 2 {
		r = append(r, q.mustEnqueue(t, spec{Record: "R"}))
	}
	c := q.mustClaimP(t, store.ClaimParams{Key: keyDefault, Limit: 10, LeaseDuration: minute, Owner: "w1", MaxPerRecord: 3})
	wantIDs(t, "claim with MaxPerRecord 3", c, a[0], a[1], a[2], r[0], r[1])
	if err := q.Complete(context.Background(), leases(c)...); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "claim of the rest", q.mustClaim(t, 1, minute, "w1"), a[3], a[4])
	if _, err := q.claim(context.Background(), store.ClaimParams{Key: keyDefault, MaxPerRecord: -1}); err == nil {
		t.Error("claim with MaxPerRecord -1 succeeded, want an error")
	}
}

func (q *queue) mustClaimP(t testing.TB, p store.ClaimParams) []item {
	t.Helper()
	evs, err := q.claim(context.Background(), p)
	if err != nil {
		t.Fatalf("%s: claim %+v: %v", q.name, p, err)
	}
	return evs
}

// testHotRecordBacklog checks claims when a hot record's backlog fills the
// front of the queue: the heads of other records behind it are still found
// (PostgreSQL switches from walking events to walking records there), oldest
// first, and nothing of a record is handed out while it is leased.
func testHotRecordBacklog(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	var sps []spec
	for range 40 {
		sps = append(sps, spec{Record: "A"})
	}
	sps = append(sps, spec{Record: "C"}, spec{Record: "B"}, spec{Record: "C"})
	got := q.mustEnqueueMany(t, sps)
	a, c1, b1, c2 := got[:40], got[40], got[41], got[42]
	one := func(owner string, limit int) []item {
		return q.mustClaimP(t, store.ClaimParams{Key: keyDefault, Limit: limit, LeaseDuration: minute, Owner: owner, MaxPerRecord: 1})
	}
	wantIDs(t, "claim(limit 1, MaxPerRecord 1)", one("w1", 1), a[0])
	wantIDs(t, "claim(1) behind A's leased backlog: the oldest other head", one("w2", 1), c1)
	wantIDs(t, "claim(1) next", one("w3", 1), b1)
	if got := one("w4", 1); len(got) != 0 {
		t.Fatalf("claim while A, B and C are all leased got %v, want nothing", got)
	}
	if q.dir != store.DirectionInternal {
		pend, err := q.getPending(ctx, keyDefault, 1)
		if err != nil {
			t.Fatal(err)
		}
		wantIDs(t, "GetPending(1) while every record is leased", pend)
	}
	b.clock.Advance(2 * minute) // every lease expires
	wantIDs(t, "claim(10) after the leases expired: each record's head, oldest first", one("w5", 10), a[0], c1, b1)
	got2 := q.mustClaimP(t, store.ClaimParams{Key: keyDefault, Limit: 10, LeaseDuration: minute, Owner: "w6"})
	if len(got2) != 0 {
		t.Fatalf("claim while w5 holds every record got %v, want nothing", got2)
	}
	b.clock.Advance(2 * minute)
	all := q.mustClaimP(t, store.ClaimParams{Key: keyDefault, Limit: 10, LeaseDuration: minute, Owner: "w7", MaxPerRecord: 50})
	want := append(append([]string{}, a...), c1, b1, c2)
	wantIDs(t, "claim(10, MaxPerRecord 50) of everything", all, want...)
}
