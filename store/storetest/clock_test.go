package storetest

import (
	"sync"
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	c := NewClock(time.Time{})
	if !c.Now().Equal(ClockStartDefault) {
		t.Fatalf("Now = %s, want %s", c.Now(), ClockStartDefault)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { c.Advance(time.Second); _ = c.Now() })
	}
	wg.Wait()
	if got, want := c.Now(), ClockStartDefault.Add(10*time.Second); !got.Equal(want) {
		t.Errorf("after 10 concurrent Advance(1s): %s, want %s", got, want)
	}
	at := time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)
	c.Set(at)
	if !c.Now().Equal(at) {
		t.Errorf("after Set: %s", c.Now())
	}
}
