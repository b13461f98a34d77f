package testwait

import (
	"sync/atomic"
	"testing"
)

func TestForReturnsWhenTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	For(t, "the third poll", func() bool { return calls.Add(1) >= 3 })
	if n := calls.Load(); n != 3 {
		t.Fatalf("cond called %d times, want 3", n)
	}
}
