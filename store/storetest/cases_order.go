package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hubsync/hubsync/store"
)

// testOrderBySequence checks that a record's events come out in the order
// their transactions committed, not in the order of their CreatedDate: the
// second enqueue reads a store clock 50 ms earlier than the first (another
// replica's clock, or this one stepping back).
func testOrderBySequence(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	enqueue := func(what string) string {
		t.Helper()
		res, err := q.enqueue(ctx, spec{Record: "R"})
		if err != nil || !res.Inserted {
			t.Fatalf("%s: enqueue %s = %+v, %v", q.name, what, res, err)
		}
		return res.ID
	}
	first := enqueue("first")
	b.clock.Advance(-50 * time.Millisecond)
	second := enqueue("second, at a clock 50 ms behind")
	b.clock.Advance(time.Second)

	f, s := q.mustGet(t, first), q.mustGet(t, second)
	if !s.CreatedDate.Before(f.CreatedDate) {
		t.Fatalf("fixture: second CreatedDate %s is not before first %s", s.CreatedDate, f.CreatedDate)
	}
	if f.Seq <= 0 || s.Seq <= f.Seq || f.Lane != f.Seq || s.Lane != s.Seq {
		t.Fatalf("Seq/Lane first = %d/%d, second = %d/%d; want positive, increasing in commit order, Lane = Seq",
			f.Seq, f.Lane, s.Seq, s.Lane)
	}
	p, err := q.getPending(ctx, keyDefault, 10)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "GetPending: the record's events in commit order", p, first)
	c := q.mustClaimP(t, store.ClaimParams{Key: keyDefault, Limit: 10, LeaseDuration: minute, Owner: "w1", MaxPerRecord: 1})
	wantIDs(t, "claim of heads only: the first committed", c, first)
	if err := q.Release(ctx, 0, leases(c)...); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "claim with followers: commit order", q.mustClaim(t, 10, minute, "w1"), first, second)
}

// testRequeueToLaneEnd checks that a re-queued dead letter goes behind the
// events its record queued meanwhile, keeping its Seq: it can never be out at
// the same time as a later change of its record, nor before it.
func testRequeueToLaneEnd(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	dead := q.mustEnqueue(t, spec{Record: "R"})
	c := q.mustClaim(t, 10, minute, "w1")
	wantIDs(t, "claim to fail", c, dead)
	if err := q.Fail(ctx, c[0].lease(), "boom"); err != nil {
		t.Fatal(err)
	}
	later := q.mustEnqueue(t, spec{Record: "R"})
	c = q.mustClaim(t, 10, minute, "w1")
	wantIDs(t, "claim of the later change", c, later)
	if n, err := q.Requeue(ctx, dead); err != nil || n != 1 {
		t.Fatalf("Requeue = %d, %v; want 1", n, err)
	}
	d, l := q.mustGet(t, dead), q.mustGet(t, later)
	if d.Seq >= l.Seq || d.Lane <= l.Lane {
		t.Fatalf("after Requeue: dead Seq/Lane %d/%d, later %d/%d; want the dead letter's Seq kept and its Lane after the later event",
			d.Seq, d.Lane, l.Seq, l.Lane)
	}
	if got := q.mustClaim(t, 10, minute, "w2"); len(got) != 0 {
		t.Fatalf("claim while the later change is leased got %v; the re-queued dead letter must wait behind it", got)
	}
	if err := q.Release(ctx, 0, c[0].lease()); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "claim after a release: the later change first, the re-queued one behind it",
		q.mustClaim(t, 10, minute, "w2"), later, dead)
}

// testInboundLaneObjectType checks that the inbound record includes the
// object type: a contact in backoff does not hold a company with the same id.
func testInboundLaneObjectType(t *testing.T, b *bundle) {
	q := b.q
	ctx := context.Background()
	contact := q.mustEnqueue(t, spec{Object: "contacts", Record: "123"})
	c := q.mustClaim(t, 10, minute, "w1")
	wantIDs(t, "claim of contact 123", c, contact)
	if _, err := q.IncrementRetry(ctx, c[0].lease(), "HubSpot 500", 0); err != nil {
		t.Fatal(err)
	}
	company := q.mustEnqueue(t, spec{Object: "companies", Record: "123"})
	wantIDs(t, "claim while contact 123 is in backoff", q.mustClaim(t, 10, minute, "w1"), company)
}

// testBatchOrder checks that EnqueueBatch gives a record's events sequences
// in batch order, whatever their CreatedDates say.
func testBatchOrder(t *testing.T, b *bundle) {
	ctx := context.Background()
	now := b.clock.Now()
	ev := func(key string, created time.Time, object string) store.InboundEvent {
		return store.InboundEvent{Source: keyDefault, ExternalID: "B", ObjectType: object, EventType: store.EventUpdate,
			Payload: []byte(`{}`), IdempotencyKey: key, QueueState: store.QueueState{CreatedDate: created}}
	}
	res, err := b.s.Inbound().EnqueueBatch(ctx, []store.InboundEvent{
		ev("b-1", now, "contacts"), ev("b-2", now.Add(-time.Second), "companies"), ev("b-3", now.Add(-2*time.Second), "contacts"),
	})
	if err != nil || len(res) != 3 {
		t.Fatalf("EnqueueBatch = %v, %v", res, err)
	}
	b.clock.Advance(time.Second)
	c := b.q.mustClaim(t, 10, minute, "w1")
	var contacts []string
	for _, it := range c {
		if it.Object == "contacts" {
			contacts = append(contacts, it.ID)
		}
	}
	if len(c) != 3 || len(contacts) != 2 || contacts[0] != res[0].ID || contacts[1] != res[2].ID {
		t.Fatalf("claim = %v; want all three, contact B's two events in batch order %s, %s", c, res[0].ID, res[2].ID)
	}
}

// testBatchAfterEnqueue checks that EnqueueBatch continues the counters of
// records that already have events: an event enqueued before the batch comes
// before the batch's events of its record, which keep batch order, and one
// enqueued after comes after them, whatever their CreatedDates say.
func testBatchAfterEnqueue(t *testing.T, b *bundle) {
	ctx := context.Background()
	now := b.clock.Now()
	first := b.q.mustEnqueue(t, spec{Object: "contacts", Record: "C"})
	other := b.q.mustEnqueue(t, spec{Object: "contacts", Record: "D"})
	ev := func(key, record string, created time.Time) store.InboundEvent {
		return store.InboundEvent{Source: keyDefault, ExternalID: record, ObjectType: "contacts", EventType: store.EventUpdate,
			Payload: []byte(`{}`), IdempotencyKey: key, QueueState: store.QueueState{CreatedDate: created}}
	}
	res, err := b.s.Inbound().EnqueueBatch(ctx, []store.InboundEvent{
		ev("ba-1", "C", now.Add(-time.Second)), ev("ba-2", "D", now.Add(-2*time.Second)),
		ev("ba-3", "C", now.Add(-3*time.Second)), ev("ba-4", "C", now.Add(-4*time.Second)),
	})
	if err != nil || len(res) != 4 {
		t.Fatalf("EnqueueBatch = %v, %v", res, err)
	}
	last := b.q.mustEnqueue(t, spec{Object: "contacts", Record: "C"})
	b.clock.Advance(time.Second)
	byRecord := map[string][]string{}
	rec := map[string]string{first: "C", other: "D", res[0].ID: "C", res[1].ID: "D", res[2].ID: "C", res[3].ID: "C", last: "C"}
	c := b.q.mustClaim(t, 10, minute, "w1")
	for _, it := range c {
		byRecord[rec[it.ID]] = append(byRecord[rec[it.ID]], it.ID)
	}
	wantC := []string{first, res[0].ID, res[2].ID, res[3].ID, last}
	wantD := []string{other, res[1].ID}
	if len(c) != 7 || !slices.Equal(byRecord["C"], wantC) || !slices.Equal(byRecord["D"], wantD) {
		t.Fatalf("claim = %v; want record C in order %v and D in order %v", c, wantC, wantD)
	}
}
