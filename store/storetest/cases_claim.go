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
	q.mustEnqueue(t, spec{Key: "other"})
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
	got, err := q.claimIDs(ctx, []string{e2, "no-such-id"}, minute, "push")
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
	got, err = q.claimIDs(ctx, []string{e2}, minute, "push2")
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "ClaimIDs of an event already leased", got)
	// An event that is not yet due is not claimable by id either.
	c := q.mustClaim(t, 1, minute, "w1")
	wantIDs(t, "claim(1)", c, e1)
	if err := q.ops().Release(ctx, time.Hour, c[0].lease()); err != nil {
		t.Fatal(err)
	}
	got, err = q.claimIDs(ctx, []string{e1}, minute, "push")
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

func testConcurrentClaimers(t *testing.T, b *bundle) {
	const records, perRecord, workers, batch = 50, 10, 8, 10
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
		inflight = map[string]string{} // record -> leased id
		nextSeq  = map[string]int{}
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
				evs, err := q.claim(ctx, keyDefault, batch, time.Hour, owner)
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
				seen := map[string]bool{}
				for _, ev := range evs {
					m, ok := metas[ev.ID]
					handed[ev.ID]++
					switch {
					case !ok:
						report("%s got unknown event %v", owner, ev)
					case handed[ev.ID] > 1:
						report("%s got %v, handed out %d times", owner, ev, handed[ev.ID])
					case ev.Attempt != 1:
						report("%s got %v with attempt %d, want 1 (no lease expired)", owner, ev, ev.Attempt)
					case seen[m.record]:
						report("%s got two events of record %s in one claim", owner, m.record)
					case inflight[m.record] != "":
						report("%s got %s of record %s while %s of that record is leased", owner, ev.ID, m.record, inflight[m.record])
					case m.seq != nextSeq[m.record]:
						report("%s got event #%d of record %s, want #%d (creation order)", owner, m.seq, m.record, nextSeq[m.record])
					}
					seen[m.record] = true
					nextSeq[m.record] = m.seq + 1
					inflight[m.record] = ev.ID
				}
				mu.Unlock()
				// Forget the leases just before Complete: no other event of these
				// records may be handed out until Complete commits, so this cannot
				// report a false violation.
				mu.Lock()
				for _, ev := range evs {
					if m, ok := metas[ev.ID]; ok && inflight[m.record] == ev.ID {
						delete(inflight, m.record)
					}
				}
				mu.Unlock()
				if err := q.ops().Complete(ctx, leases(evs)...); err != nil {
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
	if c := q.countRows(t, store.StatusProcessed); c != total {
		t.Errorf("%d rows processed, want %d", c, total)
	}
}
