package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

// testReleasedHeadHoldsRecord checks the head rule's second half: a record
// whose first unfinished event is pending again (released, or retried and due)
// while a later event of it is still leased is not handed out, by Claim or by
// ClaimIDs, until that lease ends.
func testReleasedHeadHoldsRecord(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	a1 := q.mustEnqueue(t, spec{Record: "A"})
	a2 := q.mustEnqueue(t, spec{Record: "A"})
	a3 := q.mustEnqueue(t, spec{Record: "A"})
	c := q.mustClaim(t, 10, minute, "w1")
	wantIDs(t, "claim of A1..A3", c, a1, a2, a3)
	if err := q.Release(ctx, 0, c[0].lease()); err != nil {
		t.Fatal(err)
	}
	if got := q.mustClaim(t, 10, minute, "w2"); len(got) != 0 {
		t.Fatalf("claim while A1 is released but A2, A3 are leased by w1 got %v, want nothing of A", got)
	}
	if q.keyed {
		got, err := q.claimIDsFor(ctx, []string{a1}, minute, "push")
		if err != nil {
			t.Fatal(err)
		}
		wantIDs(t, "ClaimIDs of A1, released while A2, A3 are leased", got)
	}

	// A retried head that is due again waits for its record's leased followers.
	b1 := q.mustEnqueue(t, spec{Record: "B"})
	b2 := q.mustEnqueue(t, spec{Record: "B"})
	cb := q.mustClaim(t, 10, minute, "w1")
	wantIDs(t, "claim of B1, B2 (A is held by w1)", cb, b1, b2)
	res, err := q.IncrementRetry(ctx, cb[0].lease(), "HubSpot 503", 0)
	if err != nil {
		t.Fatal(err)
	}
	b.clock.Set(res.NextAttemptDate.Add(time.Millisecond)) // B1 is due; B2's lease (and A's) still live
	if now := b.clock.Now(); cb[1].LeaseExpiresDate == nil || !now.Before(*cb[1].LeaseExpiresDate) {
		t.Fatalf("test setup: B1's backoff ends at %s, after B2's lease (%s)", now, cb[1].LeaseExpiresDate)
	}
	if got := q.mustClaim(t, 10, minute, "w2"); len(got) != 0 {
		t.Fatalf("claim while B1 is due after a retry but B2 is leased by w1 got %v, want nothing", got)
	}
	if q.keyed {
		got, err := q.claimIDsFor(ctx, []string{b1, a1}, minute, "push")
		if err != nil {
			t.Fatal(err)
		}
		wantIDs(t, "ClaimIDs of B1 and A1 while their followers are leased", got)
	}

	// Once the followers are done, the heads are claimable again.
	if err := q.Complete(ctx, cb[1].lease(), c[1].lease(), c[2].lease()); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "claim after the followers completed", q.mustClaim(t, 10, minute, "w2"), a1, b1)
}

// recordColumn is the column that tells the records of one queue's test events
// apart (every test event of a queue has the same key and object type).
func (q *queue) recordColumn() string {
	if q.dir == store.DirectionInbound {
		return "ExternalID"
	}
	return "RecordID"
}

// sharedRecords reads from the database the records that more than one owner
// holds processing events of. The subtest's clock does not move, so every
// processing event holds a live lease.
func (q *queue) sharedRecords(ctx context.Context) ([]string, error) {
	col := q.recordColumn()
	query := "SELECT " + col + " FROM " + q.table + " WHERE Status = ? GROUP BY " + col + " HAVING COUNT(DISTINCT LeaseOwner) > 1"
	rows, err := q.s.DB().QueryContext(ctx, dialectsql.Rebind(q.s.Dialect(), query), string(store.StatusProcessing))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// testConcurrentMixedClaimers runs claimers with different MaxPerRecord (1 for
// heads only, 2, and the default) and, on keyed queues, ClaimIDs of arbitrary
// events with the same choice of MaxPerRecord, while each
// claimer completes the first event of each record it got and keeps the
// record's followers leased for one more round. After every claim the database
// itself is asked whether any record has live leases of two owners: it never
// may. (The claimers' own bookkeeping cannot show this: they would have to
// update it atomically with the database.)
func testConcurrentMixedClaimers(t *testing.T, b *bundle) {
	const records, perRecord, workers, batch = 20, 6, 6, 4
	const total = records * perRecord
	q := b.q
	var sps []spec
	for range perRecord {
		for r := range records {
			sps = append(sps, spec{Record: fmt.Sprintf("m%02d", r)})
		}
	}
	all := q.mustEnqueueMany(t, sps)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		mu       sync.Mutex
		problems []string
		checks   atomic.Int64
		keptAny  atomic.Bool // some claim left a follower leased past its head
		done     atomic.Int64
		wg       sync.WaitGroup
	)
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	for w := range workers {
		owner := fmt.Sprintf("mixed-%d", w)
		rng := rand.New(rand.NewPCG(uint64(w), 18))
		wg.Go(func() {
			var kept []store.Lease // followers whose head was given back, held one round
			for done.Load() < total && ctx.Err() == nil {
				var evs []item
				var err error
				switch mode := (w + rng.IntN(3)) % 3; {
				case mode == 0 && q.keyed:
					pick := make([]string, 0, batch)
					for range batch {
						pick = append(pick, all[rng.IntN(len(all))])
					}
					evs, err = q.claimIDs(ctx, pick, store.ClaimParams{Limit: batch, LeaseDuration: time.Hour, Owner: owner, MaxPerRecord: rng.IntN(3)})
				default:
					evs, err = q.claim(ctx, store.ClaimParams{Key: keyDefault, Limit: batch, LeaseDuration: time.Hour, Owner: owner, MaxPerRecord: mode})
				}
				if err != nil {
					report("%s: claim: %v", owner, err)
					cancel()
					return
				}
				shared, err := q.sharedRecords(ctx)
				if err != nil {
					report("%s: read leases: %v", owner, err)
					cancel()
					return
				}
				checks.Add(1)
				if len(shared) > 0 {
					report("after a claim by %s the database shows records %v leased to more than one owner", owner, shared)
					cancel()
					return
				}
				if len(kept) > 0 {
					if err := q.Complete(ctx, kept...); err != nil {
						report("%s: complete kept followers: %v", owner, err)
						cancel()
						return
					}
					done.Add(int64(len(kept)))
					kept = nil
				}
				if len(evs) == 0 {
					runtime.Gosched()
					continue
				}
				// Complete each record's first event at once and keep the rest
				// leased one round longer: a record's earliest unfinished event
				// then is a leased follower while other claimers run.
				seen := map[string]bool{}
				var complete []store.Lease
				for _, ev := range evs {
					if seen[ev.Record] {
						kept = append(kept, ev.lease())
					} else {
						complete = append(complete, ev.lease())
					}
					seen[ev.Record] = true
				}
				if len(kept) > 0 {
					keptAny.Store(true)
				}
				if err := q.Complete(ctx, complete...); err != nil {
					report("%s: complete %v: %v", owner, complete, err)
					cancel()
					return
				}
				done.Add(int64(len(complete)))
			}
		})
	}
	wg.Wait()
	for _, p := range problems {
		t.Error(p)
	}
	if t.Failed() {
		return
	}
	if n := done.Load(); n != total {
		t.Fatalf("%d of %d events completed before the deadline (ctx: %v)", n, total, ctx.Err())
	}
	if c := q.countRows(t, store.StatusProcessed); c != total {
		t.Errorf("%d rows processed, want %d", c, total)
	}
	if !keptAny.Load() {
		t.Errorf("no claim returned a record's head with a follower; the case did not test what it means to")
	}
	t.Logf("%d database checks", checks.Load())
}
