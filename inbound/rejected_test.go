package inbound

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// TestReceiverKeepsValidEventsOfABadDelivery: a delivery with malformed
// events, occurredAt values that are not positive, do not fit an int64 or lie
// beyond now + MaxEventSkew stores its valid events; each refused one is
// counted by reason and kept with its reason in the rejected log, once even
// when the delivery is retried, until the cleanup. It is answered 503 (with
// Retry-After), for the events from the future (see
// TestReceiverAsksAgainForEventsAheadOfItsClock).
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
			if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
				t.Fatalf("try %d: %d %s; want 503 with Retry-After", try, rec.Code, rec.Body)
			}
			want := receiveResponse{Received: 9, Inserted: 2, Rejected: 7, Retry: got.Retry}
			if try == 1 {
				want.Inserted = 0
			}
			if got != want || got.Retry == "" {
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

// TestReceiverAsksAgainForEventsAheadOfItsClock: HubSpot's occurredAt lies
// ahead of this server's lagging clock. The delivery is answered 503 with a
// Retry-After (HubSpot delivers failed deliveries again), its other events
// stored; delivered again once the clock has caught up, the event is
// stored and the answer is 200. Before, it was answered 200 and the event
// was lost to sync.
func TestReceiverAsksAgainForEventsAheadOfItsClock(t *testing.T) {
	b := setupDialect(t, store.SQLite, store.RetryPolicy{NoJitter: true, MaxAttempts: 3})
	rc, err := NewReceiver(ReceiverConfig{Store: b.store.Inbound(), ClientSecret: testSecret, PublicURL: testPublicURL, Now: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	b.receiver = rc
	now := b.clock.Now().UnixMilli()
	ev := func(id int, at int64) string {
		return `{"eventId":` + strconv.Itoa(id) + `,"portalId":1,"occurredAt":` + strconv.FormatInt(at, 10) + `,"subscriptionType":"contact.deletion","objectId":` + strconv.Itoa(id) + `}`
	}
	body := []byte("[" + ev(1, now-1000) + "," + ev(2, now+int64(7*time.Minute/time.Millisecond)) + "]")
	rec := b.deliver(t, body)
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("first delivery: %d %s; want 503", rec.Code, rec.Body)
	}
	if ra, _ := strconv.Atoi(rec.Header().Get("Retry-After")); ra < 110 || ra > 130 {
		t.Errorf("Retry-After %q; want about 120 s (7 min ahead, 5 min allowed)", rec.Header().Get("Retry-After"))
	}
	if n := b.count(t); n != 1 {
		t.Fatalf("%d inbound rows after the first delivery; want the valid one", n)
	}
	b.clock.Advance(3 * time.Minute)
	rec = b.deliver(t, body)
	var got receiveResponse
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil || got.Inserted != 1 {
		t.Fatalf("delivered again: %d %s; want 200 storing the other event", rec.Code, rec.Body)
	}
	if n := b.count(t); n != 2 {
		t.Fatalf("%d inbound rows; want both events", n)
	}
}

// TestReceiverRefusesAnotherPortalsEvents: an app installed in two HubSpot
// accounts gets both accounts' events at one URL, signed alike. With
// PortalID set, the other account's events are refused on their own
// (foreign_portal, kept in the rejected log) and this account's stored:
// otherwise an object of the other account with the same id would change,
// or delete, this account's record.
func TestReceiverRefusesAnotherPortalsEvents(t *testing.T) {
	b := setupDialect(t, store.SQLite, store.RetryPolicy{NoJitter: true, MaxAttempts: 3})
	log, err := NewRejectedLog(b.store)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := NewReceiver(ReceiverConfig{Store: b.store.Inbound(), ClientSecret: testSecret, PublicURL: testPublicURL, Now: b.clock.Now, PortalID: "12345", Rejected: log})
	if err != nil {
		t.Fatal(err)
	}
	b.receiver = rc
	now := strconv.FormatInt(b.clock.Now().UnixMilli()-1000, 10)
	body := []byte(`[{"eventId":1,"portalId":12345,"occurredAt":` + now + `,"subscriptionType":"contact.deletion","objectId":1001},` +
		`{"eventId":2,"portalId":99999,"occurredAt":` + now + `,"subscriptionType":"contact.deletion","objectId":1002},` +
		`{"eventId":3,"occurredAt":` + now + `,"subscriptionType":"contact.deletion","objectId":1003}]`)
	rec := b.deliver(t, body)
	var got receiveResponse
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil || got.Inserted != 1 || got.Rejected != 2 {
		t.Fatalf("delivery: %d %s; want 200 storing 1 of 3", rec.Code, rec.Body)
	}
	listed, err := log.List(context.Background(), RejectedFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || listed[0].Reason != EventRejectForeignPortal || listed[1].Reason != EventRejectForeignPortal {
		t.Fatalf("rejected log %+v; want events 2 and 3 as foreign_portal", listed)
	}
}

// TestForgedDeliveriesLogOneLine: a flood of deliveries with bad signatures
// writes one log line per refusalLogEvery (the metric counts each), not one
// per delivery.
func TestForgedDeliveriesLogOneLine(t *testing.T) {
	b := setupDialect(t, store.SQLite, store.RetryPolicy{NoJitter: true, MaxAttempts: 3})
	var buf bytes.Buffer
	var mu sync.Mutex
	refused := 0
	rc, err := NewReceiver(ReceiverConfig{Store: b.store.Inbound(), ClientSecret: "another-secret", PublicURL: testPublicURL, Now: b.clock.Now,
		Logger: slog.New(slog.NewTextHandler(&buf, nil)), Hooks: ReceiverHooks{OnReject: func(string, int) { mu.Lock(); refused++; mu.Unlock() }}})
	if err != nil {
		t.Fatal(err)
	}
	b.receiver = rc
	for range 50 {
		if rec := b.deliver(t, []byte(`[]`)); rec.Code != http.StatusUnauthorized {
			t.Fatalf("forged delivery answered %d", rec.Code)
		}
	}
	if n := strings.Count(buf.String(), "webhook rejected"); n != 1 {
		t.Errorf("%d log lines for 50 forged deliveries; want 1:\n%s", n, buf.String())
	}
	if refused != 50 {
		t.Errorf("%d refusals counted; want 50", refused)
	}
}
