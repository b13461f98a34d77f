package inbound

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/store"
)

// TestReceiverStoresEchoesProcessed checks that the receiver stores the echo
// of our own write processed, at receipt and kept for audit, and the user's
// change pending: the worker applies the one, never claims the other, and
// the hooks count each where it went. A redelivery of the echo is still a
// duplicate.
func TestReceiverStoresEchoesProcessed(t *testing.T) {
	t.Parallel()
	b := setup(t) // its receiver knows testAppID
	var stored [][2]int
	rc, err := NewReceiver(ReceiverConfig{
		Store: b.store.Inbound(), ClientSecret: testSecret, PublicURL: testPublicURL, Now: b.clock.Now, AppID: testAppID,
		Hooks: ReceiverHooks{OnStored: func(pending, echoes int) { stored = append(stored, [2]int{pending, echoes}) }},
	})
	if err != nil {
		t.Fatal(err)
	}
	b.receiver = rc
	echo := func(ev *hubspot.WebhookEvent) { ev.ChangeSource, ev.SourceID = "INTEGRATION", "app:"+testAppID }
	ours := whEvent("contact.propertyChange", 8, t0, prop("firstname", "Ours"), echo)
	b.deliverEvents(t, ours, whEvent("contact.propertyChange", 8, t0+1, prop("lastname", "Theirs")))
	receivedAt := b.clock.Now()

	var echoID, userID string
	for _, ev := range b.all(t) {
		var e Event
		if err := json.Unmarshal(ev.Payload, &e); err != nil {
			t.Fatal(err)
		}
		switch {
		case e.Echo:
			echoID = ev.ID
			if ev.Status != store.StatusProcessed || ev.ProcessedDate == nil || !ev.ProcessedDate.Equal(receivedAt) || ev.Attempt != 0 {
				t.Errorf("echo stored %s, processed at %v, attempt %d; want processed at receipt (%s), never claimed",
					ev.Status, ev.ProcessedDate, ev.Attempt, receivedAt)
			}
		default:
			userID = ev.ID
			if ev.Status != store.StatusPending || ev.ProcessedDate != nil {
				t.Errorf("user's change stored %s processed at %v, want pending", ev.Status, ev.ProcessedDate)
			}
		}
	}
	if echoID == "" || userID == "" {
		t.Fatalf("stored echo %q and user change %q, want one of each", echoID, userID)
	}
	if want := [][2]int{{1, 1}}; !slices.Equal(stored, want) {
		t.Errorf("OnStored calls (pending, echoes) = %v, want %v", stored, want)
	}

	var (
		mu       sync.Mutex
		outcomes []string
	)
	w := b.newWorker(t, &fakeReader{}, "w1", func(c *WorkerConfig) {
		c.Hooks.OnOutcome = func(o, _ string) { mu.Lock(); outcomes = append(outcomes, o); mu.Unlock() }
	})
	if n := drain(t, w); n != 1 {
		t.Errorf("the worker handled %d events, want only the user's change", n)
	}
	mu.Lock()
	if !slices.Equal(outcomes, []string{OutcomeApplied}) {
		t.Errorf("worker outcomes %v, want only %q: the echo never reaches it", outcomes, OutcomeApplied)
	}
	mu.Unlock()
	if n := b.applier.numCalls(); n != 1 {
		t.Errorf("applier called %d times, want once (the user's change)", n)
	}
	if ev, err := b.store.Inbound().Get(context.Background(), echoID); err != nil || ev.Attempt != 0 || ev.Status != store.StatusProcessed {
		t.Errorf("echo after the worker ran = %+v, %v; want processed, never claimed (attempt 0)", ev.QueueState, err)
	}

	// HubSpot's retry of the echo is the same change: stored once.
	body, err := json.Marshal([]hubspot.WebhookEvent{ours})
	if err != nil {
		t.Fatal(err)
	}
	if rec := b.deliver(t, body); rec.Code != http.StatusOK {
		t.Fatalf("redelivery answered %d: %s", rec.Code, rec.Body)
	}
	if n := b.count(t); n != 2 {
		t.Errorf("%d rows after the echo's redelivery, want 2", n)
	}
	if want := [][2]int{{1, 1}, {0, 0}}; !slices.Equal(stored, want) {
		t.Errorf("OnStored calls (pending, echoes) = %v, want %v", stored, want)
	}
}

// TestWorkerHonoursReceiverEchoMark checks the other half of echo detection:
// an event marked as an echo but stored pending (by a receiver from before
// echoes were stored processed) is completed without applying by a worker
// that does not know the app id (WorkerConfig.AppID empty), and the rest is
// applied.
func TestWorkerHonoursReceiverEchoMark(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var (
		mu       sync.Mutex
		outcomes []string
	)
	w := b.newWorker(t, &fakeReader{}, "w1", func(c *WorkerConfig) {
		c.AppID = ""
		c.Hooks.OnOutcome = func(o, _ string) { mu.Lock(); outcomes = append(outcomes, o); mu.Unlock() }
	})
	echo := func(ev *hubspot.WebhookEvent) { ev.ChangeSource, ev.SourceID = "INTEGRATION", testAppID }
	body, err := json.Marshal([]hubspot.WebhookEvent{
		whEvent("contact.propertyChange", 8, t0, prop("firstname", "Ours"), echo),
		whEvent("contact.propertyChange", 8, t0+1, prop("lastname", "Theirs")),
	})
	if err != nil {
		t.Fatal(err)
	}
	parsed, _, err := ParseDelivery(body)
	if err != nil {
		t.Fatal(err)
	}
	var evs []store.InboundEvent
	for _, p := range parsed {
		ev, err := p.Resolve(nil, testAppID)
		if err != nil {
			t.Fatal(err)
		}
		ev.Status = "" // as stored before echoes were stored processed
		evs = append(evs, ev)
	}
	if _, err := b.store.Inbound().EnqueueBatch(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	if n := b.applier.numCalls(); n != 1 {
		t.Fatalf("applier called %d times, want once: the echo must be skipped, the user's change applied", n)
	}
	if got := b.statusCounts(t); got["processed"] != 2 {
		t.Fatalf("statuses %v, want both processed (the echo kept for audit)", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(outcomes, OutcomeEcho) || len(outcomes) != 2 {
		t.Errorf("outcomes %v, want one %q and one applied", outcomes, OutcomeEcho)
	}
}
