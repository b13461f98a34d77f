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

func TestRecvReturnsTheValue(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if got := Recv(t, "the value", ch); got != 7 {
		t.Fatalf("Recv = %d, want 7", got)
	}
	close(ch)
	if got := Recv(t, "the close", ch); got != 0 {
		t.Fatalf("Recv of a closed channel = %d, want 0", got)
	}
}
