package dialectsql

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hubsync/hubsync/store"
)

func TestRetry(t *testing.T) {
	transient := errors.New("deadlock")
	isTransient := func(err error) bool { return errors.Is(err, transient) }
	other := errors.New("boom")
	cases := []struct {
		name      string
		transient func(error) bool
		fail      []error // f's answers, run by run; nil after the last
		cancelAt  int     // cancel ctx during this run (1-based); 0 never
		runs      int
		want      error
	}{
		{name: "success", transient: isTransient, runs: 1},
		{name: "transient then success", transient: isTransient, fail: []error{transient, fmt.Errorf("commit: %w", transient)}, runs: 3},
		{name: "not transient", transient: isTransient, fail: []error{other, nil}, runs: 1, want: other},
		{name: "no classifier", fail: []error{transient, nil}, runs: 1, want: transient},
		{name: "lease lost", transient: func(error) bool { return true },
			fail: []error{fmt.Errorf("fence: %w: %w", store.ErrLeaseLost, transient), nil}, runs: 1, want: store.ErrLeaseLost},
		{name: "ctx done", transient: isTransient, fail: []error{transient, transient, transient, nil}, cancelAt: 2, runs: 2, want: transient},
		{name: "gives up", transient: isTransient, fail: func() []error {
			out := make([]error, RetryAttempts+1)
			for i := range out {
				out[i] = transient
			}
			return out
		}(), runs: RetryAttempts, want: transient},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			runs := 0
			err := Retry(ctx, c.transient, func() error {
				runs++
				if runs == c.cancelAt {
					cancel()
				}
				if runs <= len(c.fail) {
					return c.fail[runs-1]
				}
				return nil
			})
			if runs != c.runs || !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Errorf("Retry ran f %d times and returned %v; want %d runs and %v", runs, err, c.runs, c.want)
			}
		})
	}
}

// TestRetryStopsWaitingWhenCtxEnds: ctx ending while Retry waits before a
// retry ends the wait, and f is not run again.
func TestRetryStopsWaitingWhenCtxEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	transient := errors.New("deadlock")
	runs := 0
	err := Retry(ctx, func(error) bool {
		// Called after the run and before the wait: ctx is not done yet
		// when Retry checks it, and is done during the wait.
		defer cancel()
		return true
	}, func() error { runs++; return transient })
	if !errors.Is(err, transient) || runs != 1 {
		t.Errorf("Retry ran f %d times and returned %v; want 1 run and the transient error", runs, err)
	}
}

// DeleteBatches deletes until a batch comes back short, stops at the first
// error or when ctx ends, and counts what every call deleted.
func TestDeleteBatches(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name      string
		batch     int
		deletes   []int64 // del's answers, call by call
		failAt    int     // del fails on this call (1-based), after deleting its rows; 0 never
		cancelAt  int     // ctx ends after this call; 0 never
		wantCalls int
		wantTotal int64
		wantErr   error
	}{
		{"short first batch", 3, []int64{2}, 0, 0, 1, 2, nil},
		{"full batches, then short", 3, []int64{3, 3, 1}, 0, 0, 3, 7, nil},
		{"full, then empty", 3, []int64{3, 0}, 0, 0, 2, 3, nil},
		{"failure stops", 3, []int64{3, 3, 3}, 2, 0, 2, 6, boom},
		{"context ends between batches", 3, []int64{3, 3, 3}, 0, 1, 1, 3, context.Canceled},
		{"batch below 1 taken as 1", 0, []int64{1, 0}, 0, 0, 2, 1, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			calls := 0
			total, err := DeleteBatches(ctx, c.batch, func() (int64, error) {
				calls++
				if calls > len(c.deletes) {
					t.Fatalf("call %d past the %d planned", calls, len(c.deletes))
				}
				if calls == c.cancelAt {
					cancel()
				}
				if calls == c.failAt {
					return c.deletes[calls-1], boom
				}
				return c.deletes[calls-1], nil
			})
			if calls != c.wantCalls || total != c.wantTotal || !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
				t.Fatalf("DeleteBatches = %d, %v after %d calls; want %d, %v after %d", total, err, calls, c.wantTotal, c.wantErr, c.wantCalls)
			}
		})
	}
}
