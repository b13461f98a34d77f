package inbound

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// TestReceiverKeepsValidEventsOfABadDelivery: a delivery with malformed
// events, occurredAt values that are not positive, do not fit an int64 or lie
// beyond now + MaxEventSkew is answered 200: its valid events are stored, each
// refused one is counted by reason and kept with its reason in the rejected
// log, once even when the delivery is retried, until the cleanup.
func TestReceiverKeepsValidEventsOfABadDelivery(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setupDialect(t, d, store.RetryPolicy{NoJitter: true, MaxAttempts: 3})
		log, err := NewRejectedLog(b.store)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		counted := map[string]int{}
		rc, err := NewReceiver(ReceiverConfig{
			Store: b.store.Inbound(), ClientSecret: testSecret, PublicURL: testPublicURL, Now: b.clock.Now,
			Rejected: log, Hooks: ReceiverHooks{OnEventRejected: func(r string) { mu.Lock(); counted[r]++; mu.Unlock() }},
		})
		if err != nil {
			t.Fatal(err)
		}
		b.receiver = rc
		now := b.clock.Now().UnixMilli()
		ev := func(id int, at string) string {
			return `{"eventId":` + strconv.Itoa(id) + `,"portalId":1,"occurredAt":` + at + `,"subscriptionType":"contact.deletion","objectId":` + strconv.Itoa(id) + `}`
		}
		body := "[" + ev(1, strconv.FormatInt(now-1000, 10)) + "," + // valid
			`{"objectId":2},` + // malformed: no subscriptionType
			`7,` + // malformed: not an object
			ev(3, "0") + "," + ev(4, "-5") + "," + ev(5, "9223372036854775808") + "," + // invalid occurredAt
			ev(6, strconv.FormatInt(now+int64(time.Hour/time.Millisecond), 10)) + "," + ev(7, "9223372036854775807") + "," + // from the future
			ev(8, strconv.FormatInt(now+int64(4*time.Minute/time.Millisecond), 10)) + // within the skew: valid
			"]"
		for try := range 2 { // the second is HubSpot retrying the same delivery
			rec := b.deliver(t, []byte(body))
			var got receiveResponse
			if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
				t.Fatalf("try %d: %d %s; want 200", try, rec.Code, rec.Body)
			}
			want := receiveResponse{Received: 9, Inserted: 2, Rejected: 7}
			if try == 1 {
				want.Inserted = 0
			}
			if got != want {
				t.Fatalf("try %d: answer %+v, want %+v", try, got, want)
			}
		}
		if n := b.count(t); n != 2 {
			t.Fatalf("%d inbound rows, want the 2 valid events", n)
		}
		mu.Lock()
		if counted[EventRejectMalformed] != 4 || counted[EventRejectOccurredAt] != 6 || counted[EventRejectFuture] != 4 {
			t.Errorf("rejected events counted %v over two tries; want malformed 4, occurred_at_invalid 6, occurred_at_future 4", counted)
		}
		mu.Unlock()
		ctx := context.Background()
		listed, err := log.List(ctx, RejectedFilter{})
		if err != nil {
			t.Fatal(err)
		}
		reasons := map[string]int{}
		for _, rj := range listed {
			reasons[rj.Reason]++
			if rj.Message == "" || rj.RawPayload == "" || !rj.ReceivedAt.Equal(b.clock.Now()) {
				t.Errorf("reject %+v lacks its message, raw event or time", rj)
			}
		}
		if len(listed) != 7 || reasons[EventRejectMalformed] != 2 || reasons[EventRejectOccurredAt] != 3 || reasons[EventRejectFuture] != 2 {
			t.Fatalf("rejected log %v (%d rows); want each of the 7 once", reasons, len(listed))
		}
		page, err := log.List(ctx, RejectedFilter{Limit: 3, Before: listed[2].ID})
		if err != nil || len(page) != 3 || page[0].ID != listed[3].ID {
			t.Fatalf("second page = %v, %v; want rows 4-6", page, err)
		}
		b.clock.Advance(time.Hour)
		if n, err := log.Cleanup(ctx, b.clock.Now().Add(-time.Minute), 2); err != nil || n != 7 {
			t.Fatalf("cleanup deleted %d, %v; want 7", n, err)
		}
	})
}

// TestWorkerRefusesEventsFromTheFuture: an event stored with an occurredAt
// beyond now + MaxEventSkew (by an older receiver, or one with another clock)
// is dead-lettered with the reason, never applied.
func TestWorkerRefusesEventsFromTheFuture(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	now := b.clock.Now()
	for i, at := range []int64{now.Add(time.Hour).UnixMilli(), 9223372036854775807, now.Add(-time.Minute).UnixMilli()} {
		body, _ := json.Marshal([]any{whEvent("contact.propertyChange", int64(10+i), at, prop("firstname", "X"))})
		p, err := ParseEvents(body)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) != 1 {
			t.Fatalf("parsed %d events from a delivery of 1: %+v", len(p), p)
		}
		row, err := p[0].Resolve(nil, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.store.Inbound().Enqueue(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	w := b.newWorker(t, &fakeReader{}, "w")
	drain(t, w)
	if got := b.statusCounts(t); got["failed"] != 2 || got["processed"] != 1 {
		t.Fatalf("statuses %v; want the 2 future events failed, the past one processed", got)
	}
	if n := b.applier.numCalls(); n != 1 {
		t.Fatalf("applier called %d times, want once", n)
	}
	dead, err := b.store.Inbound().DeadLetters(ctx, store.DeadLetterFilter{Key: "hubspot"})
	if err != nil || len(dead) != 2 {
		t.Fatalf("dead letters %v, %v", dead, err)
	}
	for _, ev := range dead {
		if ev.ErrorMessage == "" {
			t.Errorf("dead letter %s has no reason", ev.ID)
		}
	}
}
