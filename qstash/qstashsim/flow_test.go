package qstashsim

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/testwait"
)

// TestFlowControlParallelism holds every delivery at the receiver and
// releases them one by one: the receiver must never see more than the
// key's parallelism at once, and must see exactly that many.
func TestFlowControlParallelism(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	release := make(chan struct{})
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		<-release
		w.WriteHeader(http.StatusOK)
	})
	t.Cleanup(func() {
		defer func() { _ = recover() }()
		close(release)
	})
	const n, parallelism = 12, 3
	fc := map[string]string{"Upstash-Flow-Control-Key": "hubspot", "Upstash-Flow-Control-Value": fmt.Sprintf("parallelism=%d", parallelism)}
	for i := range n {
		b.publish(rc.url("/w"), fmt.Sprint(i), fc)
	}
	// Another key is not held back by this one.
	other := newReceiver(t, nil)
	b.publish(other.url("/o"), "o", map[string]string{"Upstash-Flow-Control-Key": "other", "Upstash-Flow-Control-Value": "parallelism=1"})
	testwait.For(t, "the other key's delivery", func() bool { return other.count() == 1 })

	for done := 0; done < n; done++ {
		want := min(parallelism, n-done)
		testwait.For(t, fmt.Sprintf("%d deliveries in flight", want), func() bool {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			return rc.inFlight >= want
		})
		rc.mu.Lock()
		peak := rc.maxInFlight
		rc.mu.Unlock()
		if peak > parallelism {
			t.Fatalf("%d deliveries in flight at once, parallelism %d", peak, parallelism)
		}
		release <- struct{}{}
	}
	b.idle()
	st := b.sim.Stats()
	if st.MaxParallelism["hubspot"] != parallelism || st.Delivered != n+1 {
		t.Fatalf("stats %+v", st)
	}
	if fc := st.FlowControl["hubspot"]; fc.Parallelism != parallelism {
		t.Fatalf("flow control %+v", fc)
	}
}

// TestFlowControlRate sends more messages than one period admits to a
// counting receiver; no window of the period may hold more than the rate,
// retries included.
func TestFlowControlRate(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{DelayScale: 1e-5})
	var mu sync.Mutex
	failed := map[string]bool{}
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		// Every message fails once: its retry must count against the rate too.
		id := r.Header.Get("Upstash-Message-Id")
		mu.Lock()
		first := !failed[id]
		failed[id] = true
		mu.Unlock()
		if first {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	const n, rate = 6, 4
	period := 2 * time.Second
	fc := map[string]string{"Upstash-Flow-Control-Key": "k", "Upstash-Flow-Control-Value": fmt.Sprintf("rate=%d, period=%s", rate, period)}
	for i := range n {
		b.publish(rc.url("/w"), fmt.Sprint(i), fc)
	}
	b.idle()
	rc.mu.Lock()
	arrivals := append([]time.Time(nil), rc.arrivals...)
	rc.mu.Unlock()
	if len(arrivals) != 2*n {
		t.Fatalf("%d arrivals, want %d", len(arrivals), 2*n)
	}
	// The emulator admits by start time; a request reaches the receiver a
	// little later, by a varying amount. A window shorter than the period
	// by that slack must still hold at most rate arrivals.
	const slack = time.Second
	for i := range arrivals {
		in := 0
		for _, a := range arrivals[i:] {
			if a.Sub(arrivals[i]) < period-slack {
				in++
			}
		}
		if in > rate {
			t.Fatalf("%d arrivals within %v of arrival %d, rate %d per %v", in, period-slack, i, rate, period)
		}
	}
	st := b.sim.Stats()
	if st.MaxRatePerPeriod["k"] != rate {
		t.Fatalf("MaxRatePerPeriod %d, want %d (reached, never exceeded)", st.MaxRatePerPeriod["k"], rate)
	}
}
