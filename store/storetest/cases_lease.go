package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hubsync/hubsync/store"
)

func testLeaseExpiry(t *testing.T, b *bundle) {
	q := b.q
	id := q.mustEnqueue(t, spec{})
	c1 := q.mustClaim(t, 10, 30*time.Second, "w1")
	wantIDs(t, "first claim", c1, id)
	b.clock.Advance(29 * time.Second)
	if got := q.mustClaim(t, 10, 30*time.Second, "w2"); len(got) != 0 {
		t.Fatalf("claim 1s before the lease expires got %v, want nothing", got)
	}
	b.clock.Advance(2 * time.Second)
	c2 := q.mustClaim(t, 10, 30*time.Second, "w2")
	wantIDs(t, "claim after the lease expired (no sweep ran)", c2, id)
	if c2[0].Attempt != c1[0].Attempt+1 || c2[0].LeaseOwner != "w2" || c2[0].Status != store.StatusProcessing {
		t.Errorf("re-claimed %v owner %q, want attempt %d, owner w2, processing", c2[0], c2[0].LeaseOwner, c1[0].Attempt+1)
	}
}

// testExpiredLeaseFirst checks that an event whose lease expired (its worker
// died) is claimed before the records enqueued while it was out, so that
// recovering it does not wait behind the backlog that built up meanwhile.
// SQLite and MariaDB take candidates in CreatedDate order, and the expired
// event is the older one; PostgreSQL takes the lanes of expired leases
// before the other due lanes (migrations 023, 024), where it once ordered every
// due lane by the time it became due, and the expired lease's record came
// last.
func testExpiredLeaseFirst(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	a := q.mustEnqueue(t, spec{})
	wantIDs(t, "claim of A by a worker that then dies", q.mustClaim(t, 1, 30*time.Second, "dead"), a)
	b.clock.Advance(10 * time.Second)
	later := []string{q.mustEnqueue(t, spec{}), q.mustEnqueue(t, spec{})}
	b.clock.Advance(21 * time.Second) // A's lease expired about a second ago
	p, err := q.getPending(ctx, keyDefault, 1)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "GetPending(1) after A's lease expired", p, a)
	wantIDs(t, "claim(1) after A's lease expired", q.mustClaim(t, 1, 30*time.Second, "w2"), a)
	wantIDs(t, "the next claim: the records enqueued meanwhile", q.mustClaim(t, 10, 30*time.Second, "w2"), later...)
}

// testClaimedBeforeKeepsPlace checks the rule for a record whose head was
// claimed before and went back to pending: released with a delay (outbound
// releases a cycle's records when the shared HubSpot budget refuses), put in
// retry backoff after a failure, or requeued from the dead letters. Once it is
// due again, it is claimed before the records queued after it, as an expired
// lease is (testExpiredLeaseFirst): it keeps its place in the queue, and does
// not go to the back of the backlog that built up during its delay. SQLite
// and MariaDB take candidates in CreatedDate order, which none of these
// changes; PostgreSQL takes the lanes of records whose head was claimed
// before (or that hold a lease) before the other due lanes (migration 024),
// where it once ordered them by the end of their delay, behind every record
// queued before that.
func testClaimedBeforeKeepsPlace(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	ways := []struct {
		name string
		// back returns the claimed event a to pending, due again within a
		// minute (the policy's backoff is 10 s), after B and C.
		back func(a item) error
	}{
		{"released with a delay", func(a item) error { return q.Release(ctx, 5*time.Second, a.lease()) }},
		{"in retry backoff", func(a item) error {
			_, err := q.IncrementRetry(ctx, a.lease(), "HubSpot 502", 5*time.Second)
			return err
		}},
		{"failed, then requeued", func(a item) error {
			if err := q.Fail(ctx, a.lease(), "HubSpot 400"); err != nil {
				return err
			}
			_, err := q.Requeue(ctx, a.ID)
			return err
		}},
	}
	for _, w := range ways {
		a := q.mustEnqueue(t, spec{})
		wantIDs(t, w.name+": claim of A", q.mustClaim(t, 1, minute, "w1"), a)
		b.clock.Advance(time.Second)
		later := []string{q.mustEnqueue(t, spec{})}
		b.clock.Advance(time.Second)
		later = append(later, q.mustEnqueue(t, spec{}))
		if err := w.back(q.mustGet(t, a)); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		b.clock.Advance(time.Minute) // A is due again, as are B and C
		p, err := q.getPending(ctx, keyDefault, 1)
		if err != nil {
			t.Fatal(err)
		}
		wantIDs(t, w.name+": GetPending(1) once A is due again", p, a)
		got := q.mustClaim(t, 1, minute, "w2")
		wantIDs(t, w.name+": claim(1) once A is due again, before B and C queued after it", got, a)
		rest := q.mustClaim(t, 10, minute, "w2")
		wantIDs(t, w.name+": the next claim: B and C", rest, later...)
		for _, it := range append(got, rest...) {
			if err := q.Complete(ctx, it.lease()); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// snapshot is the part of an event that a rejected state change must not touch.
type snapshot struct {
	Status     store.Status
	Attempt    int
	RetryCount int
	Error      string
	Owner      string
	Next       time.Time
	Expires    time.Time
	Processed  bool
}

func snap(it item) snapshot {
	s := snapshot{Status: it.Status, Attempt: it.Attempt, RetryCount: it.RetryCount, Error: it.ErrorMessage, Owner: it.LeaseOwner, Next: it.NextAttemptDate.UTC(), Processed: it.ProcessedDate != nil}
	if it.LeaseExpiresDate != nil {
		s.Expires = it.LeaseExpiresDate.UTC()
	}
	return s
}

func testFencing(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	id := q.mustEnqueue(t, spec{})
	old := q.mustClaim(t, 1, 30*time.Second, "w1")
	wantIDs(t, "claim by w1", old, id)
	b.clock.Advance(31 * time.Second)
	cur := q.mustClaim(t, 1, 30*time.Second, "w2")
	wantIDs(t, "re-claim by w2", cur, id)
	before := snap(q.mustGet(t, id))
	lost := old[0].lease()
	ops := []struct {
		name string
		do   func() error
	}{
		{"Complete", func() error { return q.Complete(ctx, lost) }},
		{"Fail", func() error { return q.Fail(ctx, lost, "late failure") }},
		{"IncrementRetry", func() error {
			_, err := q.IncrementRetry(ctx, lost, "late retry", 0)
			return err
		}},
		{"Release", func() error { return q.Release(ctx, 0, lost) }},
	}
	for _, op := range ops {
		err := op.do()
		if !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("%s by w1 with lost lease %s@%d (row re-claimed at attempt %d): err = %v, want ErrLeaseLost", op.name, lost.ID, lost.Attempt, cur[0].Attempt, err)
		}
		if after := snap(q.mustGet(t, id)); after != before {
			t.Errorf("%s with a lost lease changed the event:\n before %+v\n after  %+v", op.name, before, after)
		}
	}
	if err := q.Complete(ctx, cur[0].lease()); err != nil {
		t.Fatalf("Complete by the current owner w2: %v", err)
	}
	done := q.mustGet(t, id)
	if done.Status != store.StatusProcessed || done.ProcessedDate == nil || !done.ProcessedDate.Equal(b.clock.Now()) {
		t.Errorf("after Complete: %v processed %v, want processed at %s", done, done.ProcessedDate, b.clock.Now())
	}
	// A finished event is no longer leased by anyone: a second Complete, or a
	// late Fail, is rejected and leaves it processed.
	if err := q.Complete(ctx, cur[0].lease()); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("second Complete of a processed event: err = %v, want ErrLeaseLost", err)
	}
	if err := q.Fail(ctx, cur[0].lease(), "late"); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("Fail of a processed event: err = %v, want ErrLeaseLost", err)
	}
	if got := q.mustGet(t, id); got.Status != store.StatusProcessed || got.ErrorMessage != "" {
		t.Errorf("after rejected changes: %v error %q, want processed, no error", got, got.ErrorMessage)
	}
}

func testFencingBatch(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	e1 := q.mustEnqueue(t, spec{})
	e2 := q.mustEnqueue(t, spec{})
	e3 := q.mustEnqueue(t, spec{})
	mine := q.mustClaim(t, 3, 30*time.Second, "w1")
	wantIDs(t, "claim(3) by w1", mine, e1, e2, e3)
	b.clock.Advance(31 * time.Second)
	stolen := q.mustClaim(t, 1, 30*time.Second, "w2")
	if len(stolen) != 1 {
		t.Fatalf("claim(1) by w2 after expiry got %v, want one event", stolen)
	}
	lostID := stolen[0].ID
	err := q.Complete(ctx, leases(mine)...)
	var lle *store.LeaseLostError
	if !errors.As(err, &lle) || !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("batch Complete with one lost lease: err = %v (%T), want a *LeaseLostError matching ErrLeaseLost", err, err)
	}
	if len(lle.Leases) != 1 || lle.Leases[0].ID != lostID || lle.Leases[0].Attempt != 1 {
		t.Errorf("LeaseLostError.Leases = %v, want only the lost %s@1", lle.Leases, lostID)
	}
	for _, it := range mine {
		got := q.mustGet(t, it.ID)
		if it.ID == lostID {
			if got.Status != store.StatusProcessing || got.Attempt != 2 || got.LeaseOwner != "w2" {
				t.Errorf("the re-claimed event after w1's batch Complete: %v owner %q, want processing attempt 2 owner w2", got, got.LeaseOwner)
			}
		} else if got.Status != store.StatusProcessed {
			t.Errorf("event %v of the batch whose lease held: want processed", got)
		}
	}
}

// testRecordKey checks which fields make up the record key: events of different
// records never block each other.
func testRecordKey(t *testing.T, b *bundle) {
	q := b.q
	leased := q.mustEnqueue(t, spec{Key: "hubspot", Object: "contacts", Record: "7"})
	wantIDs(t, "claim", q.mustClaim(t, 10, minute, "w1"), leased)
	var other []string
	switch q.dir {
	case store.DirectionOutbound:
		// (Destination, ObjectType, RecordID)
		other = append(other, q.mustEnqueue(t, spec{Key: "hubspot", Object: "companies", Record: "7"}))
		other = append(other, q.mustEnqueue(t, spec{Key: "hubspot", Object: "contacts", Record: "70"}))
		sf := q.mustEnqueue(t, spec{Key: "salesforce", Object: "contacts", Record: "7"})
		wantIDs(t, "outbound claim for another destination, same object and record", q.mustClaimKey(t, "salesforce", 10, minute, "w2"), sf)
	case store.DirectionInbound:
		// (Source, ObjectType, ExternalID)
		other = append(other, q.mustEnqueue(t, spec{Key: "hubspot", Object: "companies", Record: "7"}))
		other = append(other, q.mustEnqueue(t, spec{Key: "hubspot", Object: "contacts", Record: "70"}))
		other = append(other, q.mustEnqueue(t, spec{Key: "hubspot", Object: "contacts", Record: "07"}))
		sf := q.mustEnqueue(t, spec{Key: "salesforce", Object: "contacts", Record: "7"})
		wantIDs(t, "inbound claim for another source, same external id", q.mustClaimKey(t, "salesforce", 10, minute, "w2"), sf)
	case store.DirectionInternal:
		// (ObjectType, RecordID)
		other = append(other, q.mustEnqueue(t, spec{Object: "companies", Record: "7"}))
		other = append(other, q.mustEnqueue(t, spec{Object: "contacts", Record: "70"}))
	}
	got := q.mustClaim(t, 10, minute, "w2")
	if !slices.Equal(ids(got), other) {
		t.Errorf("claim while record (contacts, 7) is leased got %v, want the events of other records %v", got, other)
	}
}

func testBackoff(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	id := q.mustEnqueue(t, spec{})
	claim := func(what string) item {
		t.Helper()
		got := q.mustClaim(t, 10, minute, "w1")
		wantIDs(t, what, got, id)
		return got[0]
	}
	// failure 1: policy delay BackoffBase (10s).
	c := claim("first claim")
	now := b.clock.Now()
	res, err := q.IncrementRetry(ctx, c.lease(), "HubSpot 502", 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Dead || !res.NextAttemptDate.Equal(now.Add(10*time.Second)) {
		t.Errorf("IncrementRetry #1 = %+v, want not dead, NextAttemptDate now+10s = %s", res, now.Add(10*time.Second))
	}
	got := q.mustGet(t, id)
	if got.Status != store.StatusPending || got.RetryCount != 1 || got.ErrorMessage != "HubSpot 502" || !got.NextAttemptDate.Equal(now.Add(10*time.Second)) {
		t.Errorf("after IncrementRetry #1: %v error %q next %s, want pending, retry 1, error %q, next %s", got, got.ErrorMessage, got.NextAttemptDate, "HubSpot 502", now.Add(10*time.Second))
	}
	b.clock.Advance(10*time.Second - time.Millisecond)
	if got := q.mustClaim(t, 10, minute, "w1"); len(got) != 0 {
		t.Fatalf("claim 1ms before NextAttemptDate got %v", got)
	}
	b.clock.Advance(2 * time.Millisecond)
	c = claim("claim after the backoff")
	if c.Attempt != 2 || c.RetryCount != 1 {
		t.Errorf("second claim = %v, want attempt 2, retry 1", c)
	}
	// failure 2: policy delay 20s, raised by minDelay (Retry-After) to 45s.
	now = b.clock.Now()
	res, err = q.IncrementRetry(ctx, c.lease(), "HubSpot 429", 45*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.Dead || !res.NextAttemptDate.Equal(now.Add(45*time.Second)) {
		t.Errorf("IncrementRetry #2 with minDelay 45s = %+v, want NextAttemptDate now+45s = %s", res, now.Add(45*time.Second))
	}
	b.clock.Advance(44 * time.Second)
	if got := q.mustClaim(t, 10, minute, "w1"); len(got) != 0 {
		t.Fatalf("claim 1s before the minDelay passed got %v", got)
	}
	b.clock.Advance(time.Second + time.Millisecond)
	c = claim("claim after minDelay")
	// failure 3 = MaxAttempts: dead letter.
	res, err = q.IncrementRetry(ctx, c.lease(), "HubSpot 400: bad property", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Dead {
		t.Errorf("IncrementRetry #3 with MaxAttempts 3 = %+v, want Dead", res)
	}
	got = q.mustGet(t, id)
	if got.Status != store.StatusFailed || got.RetryCount != 3 || got.ErrorMessage != "HubSpot 400: bad property" {
		t.Errorf("after the last failure: %v error %q, want failed, retry 3, the last error", got, got.ErrorMessage)
	}
	b.clock.Advance(24 * time.Hour)
	if got := q.mustClaim(t, 10, minute, "w1"); len(got) != 0 {
		t.Errorf("a dead letter was claimed: %v", got)
	}
}

// failOne enqueues an event on key, claims it and dead-letters it with Fail.
func failOne(t *testing.T, b *bundle, key, msg string) string {
	t.Helper()
	id := b.q.mustEnqueue(t, spec{Key: key})
	got := b.q.mustClaimKey(t, key, 10, minute, "w1")
	wantIDs(t, "claim to fail", got, id)
	if err := b.q.Fail(context.Background(), got[0].lease(), msg); err != nil {
		t.Fatalf("Fail: %v", err)
	}
	return id
}

func testDeadLetters(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	d1 := failOne(t, b, "hubspot", "boom 1")
	d2 := failOne(t, b, "hubspot", "boom 2")
	if got := q.mustGet(t, d1); got.Status != store.StatusFailed || got.ErrorMessage != "boom 1" {
		t.Errorf("after Fail: %v error %q, want failed with boom 1", got, got.ErrorMessage)
	}
	var dOther string
	if q.keyed {
		dOther = failOne(t, b, "salesforce", "boom 3")
	}
	dl, err := q.deadLetters(ctx, store.DeadLetterFilter{Key: "hubspot"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{d1, d2}
	slices.Sort(want)
	wantIDs(t, "DeadLetters(hubspot), ids ascending", dl, want...)
	for _, it := range dl {
		if it.ErrorMessage == "" || it.Status != store.StatusFailed {
			t.Errorf("dead letter %v has error %q, want failed with its error", it, it.ErrorMessage)
		}
	}
	page, err := q.deadLetters(ctx, store.DeadLetterFilter{Key: "hubspot", Limit: 1, AfterID: want[0]})
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "DeadLetters page after the first id", page, want[1])

	n, err := q.Requeue(ctx, d1, "no-such-id")
	if err != nil || n != 1 {
		t.Fatalf("Requeue(d1, missing) = %d, %v; want 1", n, err)
	}
	if got := q.mustGet(t, d1); got.Status != store.StatusPending || got.RetryCount != 0 {
		t.Errorf("after Requeue: %v, want pending with retry 0", got)
	}
	wantIDs(t, "claim after Requeue", q.mustClaim(t, 10, minute, "w1"), d1)
	if n, err := q.Requeue(ctx, d1); err != nil || n != 0 {
		t.Errorf("Requeue of a processing event = %d, %v; want 0: only failed events are requeued", n, err)
	}
	// RequeueAll takes the failed events of one key; the internal queue, which
	// has no key, takes all of them.
	n, err = q.RequeueAll(ctx, "hubspot")
	if err != nil || n != 1 {
		t.Fatalf("RequeueAll(hubspot) = %d, %v; want 1 (d2)", n, err)
	}
	if got := q.mustGet(t, d2); got.Status != store.StatusPending || got.RetryCount != 0 {
		t.Errorf("after RequeueAll: %v, want pending with retry 0", got)
	}
	if !q.keyed {
		return
	}
	if got := q.mustGet(t, dOther); got.Status != store.StatusFailed {
		t.Errorf("RequeueAll(hubspot) touched %v of salesforce", got)
	}
}

func testRelease(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	id := q.mustEnqueue(t, spec{})
	c := q.mustClaim(t, 10, minute, "w1")
	wantIDs(t, "claim", c, id)
	// Record a failure first, so that Release's leaving RetryCount alone shows.
	res, err := q.IncrementRetry(ctx, c[0].lease(), "first", 0)
	if err != nil {
		t.Fatal(err)
	}
	b.clock.Set(res.NextAttemptDate)
	b.clock.Advance(time.Millisecond)
	c = q.mustClaim(t, 10, minute, "w1")
	wantIDs(t, "claim after retry", c, id)
	now := b.clock.Now()
	if err := q.Release(ctx, 20*time.Second, c[0].lease()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	got := q.mustGet(t, id)
	if got.Status != store.StatusPending || got.RetryCount != 1 || got.Attempt != 2 || !got.NextAttemptDate.Equal(now.Add(20*time.Second)) {
		t.Errorf("after Release(20s): %v next %s, want pending, retry 1 (unchanged), attempt 2, next %s", got, got.NextAttemptDate, now.Add(20*time.Second))
	}
	b.clock.Advance(20*time.Second - time.Millisecond)
	if got := q.mustClaim(t, 10, minute, "w1"); len(got) != 0 {
		t.Fatalf("claim before the release delay passed got %v", got)
	}
	b.clock.Advance(2 * time.Millisecond)
	wantIDs(t, "claim after the release delay", q.mustClaim(t, 10, minute, "w1"), id)
}

func testCleanup(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	t0 := b.clock.Now()
	var old []string
	for range 7 {
		old = append(old, q.mustEnqueue(t, spec{}))
	}
	c := q.mustClaim(t, 10, minute, "w1")
	wantIDs(t, "claim the 7 old events", c, old...)
	if err := q.Complete(ctx, leases(c)...); err != nil {
		t.Fatal(err)
	}
	failed := failOne(t, b, keyDefault, "dead")
	processing := q.mustEnqueue(t, spec{})
	wantIDs(t, "claim (stays processing)", q.mustClaim(t, 10, 24*time.Hour, "w1"), processing)
	pending := q.mustEnqueue(t, spec{})
	c = q.mustClaim(t, 10, minute, "w1")
	wantIDs(t, "claim (released for two days)", c, pending)
	if err := q.Release(ctx, 48*time.Hour, c[0].lease()); err != nil {
		t.Fatal(err)
	}
	b.clock.Set(t0.Add(time.Hour))
	r1 := q.mustEnqueue(t, spec{})
	r2 := q.mustEnqueue(t, spec{})
	c = q.mustClaim(t, 10, minute, "w1")
	wantIDs(t, "claim the recent events", c, r1, r2)
	if err := q.Complete(ctx, leases(c)...); err != nil {
		t.Fatal(err)
	}
	cutoff := t0.Add(30 * time.Minute)
	n, err := q.Cleanup(ctx, cutoff, 3)
	if err != nil {
		t.Fatalf("Cleanup(batch 3): %v", err)
	}
	if n != 7 {
		t.Errorf("Cleanup(cutoff, batch 3) deleted %d, want all 7 old processed events (in several batches)", n)
	}
	for _, id := range old {
		if _, err := q.get(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("old processed %s after Cleanup: err = %v, want ErrNotFound", id, err)
		}
	}
	for what, id := range map[string]string{"failed": failed, "processing": processing, "pending": pending, "recent processed": r1} {
		if _, err := q.get(ctx, id); err != nil {
			t.Errorf("Cleanup deleted the %s event %s: %v", what, id, err)
		}
	}
	if c := q.countRows(t, ""); c != 5 {
		t.Errorf("%d rows after Cleanup, want 5", c)
	}
	if n, err := q.Cleanup(ctx, cutoff, 3); err != nil || n != 0 {
		t.Errorf("second Cleanup = %d, %v; want 0", n, err)
	}
}

func testStats(t *testing.T, b *bundle) {
	ctx := context.Background()
	q := b.q // inbound
	outQ := newQueue(kindOutbound, b.s, b.clock)
	inQ := newQueue(kindInternal, b.s, b.clock)
	oldest := b.clock.Now()
	q.mustEnqueue(t, spec{Key: "hubspot"})
	q.mustEnqueue(t, spec{Key: "hubspot"})
	q.mustEnqueue(t, spec{Key: "hubspot"})
	if c := q.mustClaim(t, 1, minute, "w1"); len(c) != 1 {
		t.Fatalf("claim(1) got %v, want one event", c)
	}
	failOne(t, b, "salesforce", "dead")
	outQ.mustEnqueue(t, spec{Key: "hubspot"})
	c := outQ.mustClaim(t, 1, minute, "w1")
	if err := outQ.Complete(ctx, leases(c)...); err != nil {
		t.Fatal(err)
	}
	inQ.mustEnqueue(t, spec{})
	b.clock.Advance(time.Minute)
	st, err := b.s.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if !st.Now.Equal(b.clock.Now()) {
		t.Errorf("Stats.Now = %s, want the store clock's %s", st.Now, b.clock.Now())
	}
	type k struct {
		d   store.Direction
		key string
		s   store.Status
	}
	want := map[k]int64{
		{store.DirectionInbound, "hubspot", store.StatusPending}:    2,
		{store.DirectionInbound, "hubspot", store.StatusProcessing}: 1,
		{store.DirectionInbound, "salesforce", store.StatusFailed}:  1,
		{store.DirectionOutbound, "hubspot", store.StatusProcessed}: 1,
		{store.DirectionInternal, "", store.StatusPending}:          1,
	}
	got := map[k]store.StatsRow{}
	for _, r := range st.Rows {
		if r.Count == 0 {
			continue
		}
		got[k{r.Direction, r.Key, r.Status}] = r
	}
	for key, n := range want {
		if got[key].Count != n {
			t.Errorf("Stats %s/%q/%s = %d, want %d (rows %+v)", key.d, key.key, key.s, got[key].Count, n, st.Rows)
		}
	}
	for key, r := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("Stats has unexpected row %+v", r)
		}
	}
	// The processing event was the oldest; the two pending ones were enqueued 1ms
	// and 2ms after it.
	if r := got[k{store.DirectionInbound, "hubspot", store.StatusPending}]; !r.OldestCreated.Equal(oldest.Add(time.Millisecond)) {
		t.Errorf("oldest pending inbound hubspot CreatedDate = %s, want %s", r.OldestCreated, oldest.Add(time.Millisecond))
	}
	if r := got[k{store.DirectionInbound, "hubspot", store.StatusProcessing}]; !r.OldestCreated.Equal(oldest) {
		t.Errorf("oldest processing inbound hubspot CreatedDate = %s, want %s", r.OldestCreated, oldest)
	}
}

// testCompleteTx: CompleteTx completes inside the caller's transaction, so a
// rollback leaves the events processing under their leases, a commit completes
// them, and a lost lease is reported (the caller then rolls back) without
// touching the event another worker holds.
func testCompleteTx(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	db := b.s.DB()
	e1 := q.mustEnqueue(t, spec{})
	e2 := q.mustEnqueue(t, spec{})
	mine := q.mustClaim(t, 2, 30*time.Second, "w1")
	wantIDs(t, "claim(2) by w1", mine, e1, e2)
	before := snap(q.mustGet(t, e1))

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.CompleteTx(ctx, tx, leases(mine)...); err != nil {
		tx.Rollback()
		t.Fatalf("CompleteTx by the owner: %v", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if after := snap(q.mustGet(t, e1)); after != before {
		t.Fatalf("a rolled-back CompleteTx changed the event:\n before %+v\n after  %+v", before, after)
	}

	// w2 takes one of them over after w1's lease expired.
	b.clock.Advance(31 * time.Second)
	stolen := q.mustClaim(t, 1, 30*time.Second, "w2")
	if len(stolen) != 1 {
		t.Fatalf("claim(1) by w2 after expiry got %v, want one event", stolen)
	}
	lostID, keptID := e2, e1
	keep := mine[0]
	if stolen[0].ID == e1 {
		lostID, keptID, keep = e1, e2, mine[1]
	}
	held := snap(q.mustGet(t, lostID))
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = q.CompleteTx(ctx, tx, leases(mine)...)
	var lle *store.LeaseLostError
	if !errors.As(err, &lle) || !errors.Is(err, store.ErrLeaseLost) || len(lle.Leases) != 1 || lle.Leases[0].ID != lostID {
		tx.Rollback()
		t.Fatalf("CompleteTx with %s's lease lost: err = %v, want a *LeaseLostError naming only it", lostID, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if after := snap(q.mustGet(t, lostID)); after != held {
		t.Fatalf("w1's CompleteTx changed the event w2 holds:\n before %+v\n after  %+v", held, after)
	}
	if got := q.mustGet(t, keptID); got.Status != store.StatusProcessing {
		t.Fatalf("%s after a rolled-back CompleteTx: %v, want processing", keptID, got)
	}

	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.CompleteTx(ctx, tx, keep.lease()); err != nil {
		tx.Rollback()
		t.Fatalf("CompleteTx of %s: %v", keptID, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := q.mustGet(t, keptID); got.Status != store.StatusProcessed || got.ProcessedDate == nil {
		t.Fatalf("%s after a committed CompleteTx: %v, want processed", keptID, got)
	}
}

// testExtendLease checks the heartbeat: an extended lease keeps its events from
// other claimers past the claim's expiry; a lease that stops being extended
// expires as any other; a lease claimed again is reported lost and left alone;
// finished events are neither changed nor reported; and an extension never
// shortens a lease.
func testExtendLease(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	beating := q.mustEnqueue(t, spec{Record: "beating"})
	silent := q.mustEnqueue(t, spec{Record: "silent"})
	done := q.mustEnqueue(t, spec{Record: "done"})
	c := q.mustClaim(t, 10, 30*time.Second, "w1")
	wantIDs(t, "claim by w1", c, beating, silent, done)
	byID := map[string]item{}
	for _, it := range c {
		byID[it.ID] = it
	}
	if err := q.Complete(ctx, byID[done].lease()); err != nil {
		t.Fatal(err)
	}
	doneBefore := snap(q.mustGet(t, done))

	// Heartbeats every 20 s keep "beating" for 60 s; "silent" gets none.
	for range 3 {
		b.clock.Advance(20 * time.Second)
		if err := q.ExtendLease(ctx, 30*time.Second, byID[beating].lease(), byID[done].lease()); err != nil {
			t.Fatalf("ExtendLease of a held lease and a completed event: %v", err)
		}
		if got := q.mustGet(t, beating); got.LeaseExpiresDate == nil || !got.LeaseExpiresDate.Equal(b.clock.Now().Add(30*time.Second)) {
			t.Fatalf("after ExtendLease(30s) at %s: lease expires %v, want %s", b.clock.Now(), got.LeaseExpiresDate, b.clock.Now().Add(30*time.Second))
		}
	}
	if after := snap(q.mustGet(t, done)); after != doneBefore {
		t.Errorf("ExtendLease changed a completed event:\n before %+v\n after  %+v", doneBefore, after)
	}
	// 60 s after the claim: "silent" expired 30 s ago and is claimable, the
	// extended "beating" is not.
	c2 := q.mustClaim(t, 10, 30*time.Second, "w2")
	wantIDs(t, "claim by w2 after w1 extended only one lease", c2, silent)

	// The lease w2 took from w1 is lost to w1: reported, and not extended.
	silentBefore := snap(q.mustGet(t, silent))
	err := q.ExtendLease(ctx, time.Hour, byID[beating].lease(), byID[silent].lease())
	var lle *store.LeaseLostError
	if !errors.As(err, &lle) || !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("ExtendLease with one lease re-claimed: err = %v (%T), want a *LeaseLostError", err, err)
	}
	if len(lle.Leases) != 1 || lle.Leases[0] != byID[silent].lease() {
		t.Errorf("LeaseLostError.Leases = %v, want only %v", lle.Leases, byID[silent].lease())
	}
	if after := snap(q.mustGet(t, silent)); after != silentBefore {
		t.Errorf("ExtendLease by w1 changed the event w2 holds:\n before %+v\n after  %+v", silentBefore, after)
	}
	// An hour was granted to "beating" in the same call; a shorter extension
	// leaves it.
	want := b.clock.Now().Add(time.Hour)
	if err := q.ExtendLease(ctx, time.Second, byID[beating].lease()); err != nil {
		t.Fatal(err)
	}
	if got := q.mustGet(t, beating); got.LeaseExpiresDate == nil || !got.LeaseExpiresDate.Equal(want) {
		t.Errorf("ExtendLease(1s) after ExtendLease(1h): expires %v, want %s (never shortened)", got.LeaseExpiresDate, want)
	}
	if err := q.Complete(ctx, byID[beating].lease()); err != nil {
		t.Errorf("Complete after heartbeats: %v", err)
	}
	if err := q.ExtendLease(ctx, time.Second); err != nil {
		t.Errorf("ExtendLease of no leases: %v", err)
	}
}
