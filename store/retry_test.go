package store

import (
	"testing"
	"time"
)

// TestRetryPolicyDelay checks the backoff: it starts at BackoffBase, doubles
// with each failure, stops at BackoffMax, and with jitter stays between half
// the delay and the delay.
func TestRetryPolicyDelay(t *testing.T) {
	p := RetryPolicy{BackoffBase: time.Second, BackoffMax: 10 * time.Second, NoJitter: true}
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
		if got := p.Delay(i + 1); got != want {
			t.Errorf("Delay(%d) = %s, want %s", i+1, got, want)
		}
	}
	p.NoJitter = false
	for range 100 {
		if d := p.Delay(3); d < 2*time.Second || d > 4*time.Second {
			t.Fatalf("Delay(3) with jitter = %s, want within [2s, 4s]", d)
		}
	}
}
