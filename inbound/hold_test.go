package inbound

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/store"
)

// TestWorkerFailedEventHoldsItsRecord checks that when the applier fails
// transiently on a record's first event, the record's later events of the same
// batch are released (pending, no attempt used) instead of applied out of
// order, while other records go on; after the backoff the record's events are
// applied in order.
func TestWorkerFailedEventHoldsItsRecord(t *testing.T) {
	t.Parallel()
	b := setup(t)
	failOnce := true
	b.applier.fail = func(ch apply.Change) error {
		if ch.ExternalID == "1" && failOnce {
			failOnce = false
			return errors.New("deadlock detected")
		}
		return nil
	}
	var (
		mu       sync.Mutex
		outcomes = map[string]int{}
	)
	w := b.newWorker(t, &fakeReader{}, "w1", func(c *WorkerConfig) {
		c.Hooks.OnOutcome = func(o, _ string) { mu.Lock(); outcomes[o]++; mu.Unlock() }
	})
	b.deliverEvents(t,
		whEvent("contact.propertyChange", 1, t0, prop("firstname", "first")),
		whEvent("contact.propertyChange", 1, t0+10, prop("firstname", "second")),
		whEvent("contact.propertyChange", 1, t0+20, prop("lastname", "third")),
		whEvent("contact.propertyChange", 2, t0+5, prop("firstname", "other")),
	)
	if n, err := w.RunOnce(context.Background()); n != 4 || err != nil {
		t.Fatalf("RunOnce = %d, %v; want all four events claimed", n, err)
	}
	for _, ch := range b.applier.calls {
		if ch.ExternalID == "1" && ch.OccurredAt.After(time.UnixMilli(t0)) {
			t.Fatalf("contact 1's later change (occurredAt %s) was applied after its first change failed", ch.OccurredAt)
		}
	}
	if rec, ok := b.applier.record("contacts", "2"); !ok || rec.Fields["first_name"] != "other" {
		t.Fatalf("contact 2 = %+v, %v; another record's failure must not hold it", rec, ok)
	}
	retried, released := 0, 0
	for _, ev := range b.all(t) {
		switch {
		case ev.ExternalID != "1":
		case ev.Status != store.StatusPending:
			t.Errorf("contact 1's event %s is %s, want pending", ev.ID, ev.Status)
		case ev.RetryCount == 1:
			retried++
		case ev.RetryCount == 0:
			released++
		default:
			t.Errorf("contact 1's event %s has %d retries", ev.ID, ev.RetryCount)
		}
	}
	if retried != 1 || released != 2 {
		t.Fatalf("contact 1: %d events retried, %d released; want the failed one retried, its 2 followers released", retried, released)
	}
	mu.Lock()
	if outcomes[OutcomeReleased] != 2 {
		t.Errorf("outcomes %v, want 2 %q", outcomes, OutcomeReleased)
	}
	mu.Unlock()

	b.clock.Advance(time.Hour)
	drain(t, w)
	rec, ok := b.applier.record("contacts", "1")
	if !ok || rec.Fields["first_name"] != "second" || rec.Fields["last_name"] != "third" {
		t.Fatalf("contact 1 = %+v, %v; want its three changes applied in order", rec, ok)
	}
}
