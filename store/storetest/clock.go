package storetest

import (
	"sync"
	"time"
)

// ClockStartDefault is where a NewClock(time.Time{}) starts: a fixed instant far
// from the wall clock, so a store that reads the database's clock instead of
// Config.Now is caught at once. It is a whole second, so it survives every
// backend's timestamp precision (microseconds) unchanged.
var ClockStartDefault = time.Date(2031, time.March, 4, 5, 6, 7, 0, time.UTC)

// Clock is a controllable clock, safe for concurrent use. Pass its Now as
// store.Config.Now and move time with Advance.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock reading start (ClockStartDefault when zero).
func NewClock(start time.Time) *Clock {
	if start.IsZero() {
		start = ClockStartDefault
	}
	return &Clock{now: start}
}

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
