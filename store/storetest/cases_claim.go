package storetest

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync/store"
)

const minute = time.Minute

// wantIDs fails unless got holds exactly the events want, in that order.
func wantIDs(t *testing.T, what string, got []item, want ...string) {
	t.Helper()
	if !slices.Equal(ids(got), want) {
		t.Fatalf("%s: got %v, want ids %v", what, got, want)
	}
}

func testGetPending(t *testing.T, b *bundle) {
	q := b.q
	e1 := q.mustEnqueue(t, spec{})
	e2 := q.mustEnqueue(t, spec{})
	e3 := q.mustEnqueue(t, spec{})
	if q.keyed {
		q.mustEnqueue(t, spec{Key: "other"})
	}
	ctx := context.Background()
	got, err := q.getPending(ctx, keyDefault, 10)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "GetPending(hubspot, 10)", got, e1, e2, e3)
	got, err = q.getPending(ctx, keyDefault, 2)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "GetPending(hubspot, 2)", got, e1, e2)
	for _, id := range []string{e1, e2, e3} {
		if it := q.mustGet(t, id); it.Status != store.StatusPending || it.Attempt != 0 {
			t.Errorf("after GetPending %v, want pending with attempt 0: GetPending must not claim", it)
		}
	}
	wantIDs(t, "claim(1) after GetPending", q.mustClaim(t, 1, minute, "w1"), e1)
	got, err = q.getPending(ctx, keyDefault, 10)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "GetPending after e1 was claimed", got, e2, e3)
}

func testClaimIDs(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	e1 := q.mustEnqueue(t, spec{})
	e2 := q.mustEnqueue(t, spec{})
	e3 := q.mustEnqueue(t, spec{})
	got, err := q.claimIDsFor(ctx, []string{e2, "no-such-id"}, minute, "push")
	if err != nil {
		t.Fatalf("ClaimIDs(e2, missing): %v", err)
	}
	wantIDs(t, "ClaimIDs(e2, missing)", got, e2)
	if got[0].Status != store.StatusProcessing || got[0].Attempt != 1 || got[0].LeaseOwner != "push" {
		t.Errorf("ClaimIDs handed out %v owner %q, want processing, attempt 1, owner push", got[0], got[0].LeaseOwner)
	}
	for _, id := range []string{e1, e3} {
		if it := q.mustGet(t, id); it.Status != store.StatusPending {
			t.Errorf("ClaimIDs(e2) changed %v; only named events may be claimed", it)
		}
	}
	got, err = q.claimIDsFor(ctx, []string{e2}, minute, "push2")
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "ClaimIDs of an event already leased", got)
	// An event that is not yet due is not claimable by id either.
	c := q.mustClaim(t, 1, minute, "w1")
	wantIDs(t, "claim(1)", c, e1)
	if err := q.Release(ctx, time.Hour, c[0].lease()); err != nil {
		t.Fatal(err)
	}
	got, err = q.claimIDsFor(ctx, []string{e1}, minute, "push")
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "ClaimIDs of an event released for an hour", got)
}

func testClaimSetsLease(t *testing.T, b *bundle) {
	q := b.q
	e1 := q.mustEnqueue(t, spec{})
	e2 := q.mustEnqueue(t, spec{})
	now := b.clock.Now()
	got := q.mustClaim(t, 10, 30*time.Second, "host-1/42/w3")
	wantIDs(t, "claim(10)", got, e1, e2)
	for _, it := range got {
		if it.Status != store.StatusProcessing || it.Attempt != 1 || it.LeaseOwner != "host-1/42/w3" {
			t.Errorf("claimed %v owner %q, want processing, attempt 1, owner host-1/42/w3", it, it.LeaseOwner)
		}
		if it.LeaseExpiresDate == nil || !it.LeaseExpiresDate.Equal(now.Add(30*time.Second)) {
			t.Errorf("claimed %s LeaseExpiresDate = %v, want now+30s = %s", it.ID, it.LeaseExpiresDate, now.Add(30*time.Second))
		}
		if stored := q.mustGet(t, it.ID); stored.Status != store.StatusProcessing || stored.Attempt != 1 || stored.LeaseOwner != it.LeaseOwner {
			t.Errorf("stored after claim: %v owner %q, want what the claim returned", stored, stored.LeaseOwner)
		}
	}
	if got := q.mustClaim(t, 10, 30*time.Second, "w2"); len(got) != 0 {
		t.Errorf("second claim while leased got %v, want nothing", got)
	}
}

func testClaimExactKey(t *testing.T, b *bundle) {
	q := b.q
	hub1 := q.mustEnqueue(t, spec{Key: "hubspot"})
	hub2 := q.mustEnqueue(t, spec{Key: "hubspot"})
	other2 := q.mustEnqueue(t, spec{Key: "hubspot2"})
	other := q.mustEnqueue(t, spec{Key: "hub"})
	for _, key := range []string{"hub%", "hubspot_", "HUBSPOT"} {
		if got := q.mustClaimKey(t, key, 10, minute, "w"); len(got) != 0 {
			t.Errorf("claim for key %q got %v; keys must match exactly (no LIKE, no prefix, case-sensitive)", key, got)
		}
	}
	wantIDs(t, `claim for "hub"`, q.mustClaimKey(t, "hub", 10, minute, "w"), other)
	wantIDs(t, `claim for "hubspot2"`, q.mustClaimKey(t, "hubspot2", 10, minute, "w"), other2)
	wantIDs(t, `claim for "hubspot"`, q.mustClaimKey(t, "hubspot", 10, minute, "w"), hub1, hub2)
}

// testConcurrentClaimers runs several claimers over many records with several
// events each: every event is handed out exactly once, in its record's order,
// and no two claimers ever hold live leases on one record at the same time
// (checked by recording, per record, the owners holding its leases whenever a
// claim returns).
func testConcurrentClaimers(t *testing.T, b *bundle) {
	const records, perRecord, workers, batch = 50, 10, 8, 5
	const total = records * perRecord
	q := b.q
	type meta struct {
		record string
		seq    int
	}
	var sps []spec
	var want []meta
	for seq := range perRecord {
		for r := range records {
			rec := fmt.Sprintf("r%02d", r)
			sps = append(sps, spec{Record: rec})
			want = append(want, meta{rec, seq})
		}
	}
	metas := map[string]meta{}
	for i, id := range q.mustEnqueueMany(t, sps) {
		metas[id] = want[i]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		mu       sync.Mutex
		handed   = map[string]int{}
		holders  = map[string]map[string]int{} // record -> owner -> events leased
		nextSeq  = map[string]int{}
		grouped  int // claims that returned more than one event of a record
		problems []string
		done     atomic.Int64
		wg       sync.WaitGroup
	)
	report := func(format string, args ...any) {
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	for w := range workers {
		owner := fmt.Sprintf("worker-%d", w)
		wg.Go(func() {
			for done.Load() < total && ctx.Err() == nil {
				evs, err := q.claimKey(ctx, keyDefault, batch, time.Hour, owner)
				if err != nil {
					mu.Lock()
					report("%s: claim: %v", owner, err)
					mu.Unlock()
					cancel()
					return
				}
				if len(evs) == 0 {
					runtime.Gosched()
					continue
				}
				mu.Lock()
				perRec := map[string]int{}
				for i, ev := range evs {
					m, ok := metas[ev.ID]
					handed[ev.ID]++
					switch {
					case !ok:
						report("%s got unknown event %v", owner, ev)
						continue
					case handed[ev.ID] > 1:
						report("%s got %v, handed out %d times", owner, ev, handed[ev.ID])
					case ev.Attempt != 1 || ev.LeaseOwner != owner:
						report("%s got %v owner %q, want attempt 1 (no lease expired) and its own lease", owner, ev, ev.LeaseOwner)
					case m.seq != nextSeq[m.record]:
						report("%s got event #%d of record %s, want #%d (creation order)", owner, m.seq, m.record, nextSeq[m.record])
					case i > 0 && evs[i-1].CreatedDate.After(ev.CreatedDate):
						report("%s: claim result not in CreatedDate order at %v", owner, ev)
					}
					for other := range holders[m.record] {
						if other != owner {
							report("%s got %s of record %s while %s holds live leases on that record", owner, ev.ID, m.record, other)
						}
					}
					if holders[m.record] == nil {
						holders[m.record] = map[string]int{}
					}
					holders[m.record][owner]++
					perRec[m.record]++
					nextSeq[m.record] = m.seq + 1
				}
				if len(perRec) > batch {
					report("%s got events of %d records in one claim, want at most Limit %d", owner, len(perRec), batch)
				}
				for _, n := range perRec {
					if n > 1 {
						grouped++
						break
					}
				}
				// Forget the leases just before Complete: no other claimer may get
				// an event of these records until Complete commits, so this cannot
				// report a false violation.
				for _, ev := range evs {
					if m, ok := metas[ev.ID]; ok {
						if holders[m.record][owner]--; holders[m.record][owner] == 0 {
							delete(holders[m.record], owner)
						}
					}
				}
				mu.Unlock()
				if err := q.Complete(ctx, leases(evs)...); err != nil {
					mu.Lock()
					report("%s: complete %v: %v", owner, ids(evs), err)
					mu.Unlock()
					cancel()
					return
				}
				done.Add(int64(len(evs)))
			}
		})
	}
	wg.Wait()
	for _, p := range problems {
		t.Error(p)
	}
	if n := done.Load(); n != total {
		t.Fatalf("%d of %d events completed before the deadline (ctx: %v)", n, total, ctx.Err())
	}
	for id := range metas {
		if handed[id] != 1 {
			t.Errorf("event %s handed out %d times, want once", id, handed[id])
		}
	}
	if grouped == 0 {
		t.Errorf("no claim returned more than one event of a record; a record's due events must come together")
	}
	if c := q.countRows(t, store.StatusProcessed); c != total {
		t.Errorf("%d rows processed, want %d", c, total)
	}
}
