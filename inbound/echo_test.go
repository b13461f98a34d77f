package inbound

import (
	"slices"
	"sync"
	"testing"

	"github.com/hubsync/hubsync/hubspot"
)

// TestWorkerHonoursReceiverEchoMark checks the other half of echo detection: a
// worker that does not know the app id (WorkerConfig.AppID empty) still skips
// the events the receiver marked as echoes of our own writes, and applies the
// rest.
func TestWorkerHonoursReceiverEchoMark(t *testing.T) {
	t.Parallel()
	b := setup(t) // its receiver knows testAppID and marks echoes
	var (
		mu       sync.Mutex
		outcomes []string
	)
	w := b.newWorker(t, &fakeReader{}, "w1", func(c *WorkerConfig) {
		c.AppID = ""
		c.Hooks.OnOutcome = func(o, _ string) { mu.Lock(); outcomes = append(outcomes, o); mu.Unlock() }
	})
	echo := func(ev *hubspot.WebhookEvent) { ev.ChangeSource, ev.SourceID = "INTEGRATION", testAppID }
	b.deliverEvents(t,
		whEvent("contact.propertyChange", 8, t0, prop("firstname", "Ours"), echo),
		whEvent("contact.propertyChange", 8, t0+1, prop("lastname", "Theirs")),
	)
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
