package leasekeep

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/store"
)

// fakeExtender records the extensions asked of it and answers with err.
type fakeExtender struct {
	mu    sync.Mutex
	asked []time.Duration
	err   error
}

func (f *fakeExtender) ExtendLease(_ context.Context, d time.Duration, _ ...store.Lease) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, d)
	return f.err
}

func (f *fakeExtender) calls() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.asked...)
}

func start(t *testing.T, ext Extender, now time.Time) *Keeper {
	t.Helper()
	// A lease of an hour: no heartbeat fires during the test.
	k := Start(context.Background(), ext, Config{
		Leases: []store.Lease{{ID: "e1", Attempt: 1}}, Duration: time.Hour,
		Expiry: now.Add(10 * time.Second), Now: func() time.Time { return now },
	})
	t.Cleanup(k.Stop)
	return k
}

func TestEnsure(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t.Run("within the lease, no extension", func(t *testing.T) {
		ext := &fakeExtender{}
		k := start(t, ext, now)
		if !k.Ensure(context.Background(), 5*time.Second) || len(ext.calls()) != 0 {
			t.Fatalf("Ensure(5s) with 10s left: extensions %v; want true without any", ext.calls())
		}
	})
	t.Run("past the lease, extends it", func(t *testing.T) {
		ext := &fakeExtender{}
		k := start(t, ext, now)
		if !k.Ensure(context.Background(), 20*time.Second) {
			t.Fatal("Ensure(20s) with 10s left and a working store = false")
		}
		if got := ext.calls(); len(got) != 1 || got[0] < 20*time.Second {
			t.Fatalf("extensions %v; want one of at least 20s", got)
		}
		if !k.Expiry().After(now.Add(20 * time.Second)) {
			t.Fatalf("Expiry %s; want past now+20s", k.Expiry())
		}
	})
	t.Run("store failing", func(t *testing.T) {
		ext := &fakeExtender{err: errors.New("connection refused")}
		k := start(t, ext, now)
		if k.Ensure(context.Background(), 20*time.Second) || k.Lost() {
			t.Fatalf("Ensure with a failing store = true or lost; want false, not lost")
		}
		if !k.Ensure(context.Background(), 5*time.Second) {
			t.Fatal("Ensure(5s) within the claim's own lease = false")
		}
	})
	t.Run("lease lost", func(t *testing.T) {
		ext := &fakeExtender{err: &store.LeaseLostError{Leases: []store.Lease{{ID: "e1", Attempt: 1}}}}
		k := start(t, ext, now)
		if k.Ensure(context.Background(), 20*time.Second) || !k.Lost() {
			t.Fatal("Ensure with a lost lease = true, or Lost false")
		}
		if k.Ensure(context.Background(), time.Second) {
			t.Fatal("Ensure after a lost lease = true; want false whatever time is left")
		}
	})
}

func TestHeartbeatsUntilStop(t *testing.T) {
	ext := &fakeExtender{}
	now := time.Now()
	k := Start(context.Background(), ext, Config{
		Leases: []store.Lease{{ID: "e1", Attempt: 1}}, Duration: 30 * time.Millisecond,
		Expiry: now.Add(30 * time.Millisecond), Now: time.Now,
	})
	testwait.For(t, "three heartbeats", func() bool { return len(ext.calls()) >= 3 })
	k.Stop()
	n := len(ext.calls())
	for _, d := range ext.calls() {
		if d != 30*time.Millisecond {
			t.Fatalf("heartbeat asked %s; want the lease duration 30ms", d)
		}
	}
	k.Stop() // idempotent
	if got := len(ext.calls()); got != n {
		t.Fatalf("%d heartbeats after Stop returned", got-n)
	}
}
