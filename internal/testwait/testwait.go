// Package testwait lets tests wait on a condition instead of sleeping and
// hoping: it polls the condition until it holds, and fails the test with what
// it was waiting for when a generous deadline passes.
package testwait

import (
	"testing"
	"time"
)

// Deadline bounds every wait. It is generous because CI runs the tests under the
// race detector on two cores; a condition that holds returns at once anyway.
const Deadline = 60 * time.Second

// pollInterval is how often the condition is checked.
const pollInterval = 5 * time.Millisecond

// For polls cond until it returns true, or fails t naming what was awaited.
func For(t testing.TB, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(Deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %s waiting for %s", Deadline, what)
		}
		time.Sleep(pollInterval)
	}
}

// Recv returns the next value received from ch, or fails t naming what was
// awaited when none arrives within Deadline. A closed channel returns its
// zero value, as a receive does.
func Recv[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(Deadline)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("timed out after %s waiting for %s", Deadline, what)
		var zero T
		return zero
	}
}
