package outbound

import "time"

// SetNarrowedHook makes w call f each time one of its loops stands aside
// after a budget refusal (NarrowFor).
func SetNarrowedHook(w *Worker, f func()) { w.testNarrowed = f }

// Pause is how long one of w's loops waits after a cycle that returned s,
// and whether Notify cuts that wait short.
func Pause(w *Worker, s Summary) (time.Duration, bool) {
	notify := make(chan struct{})
	wait, wake := w.pause(s, nil, notify)
	return wait, wake != nil
}

// OweRetryDelay is oweRetryDelay, for tests.
const OweRetryDelay = oweRetryDelay
