package ui

import (
	"sync"
	"time"
)

// ActivityMinutes is how many minutes of activity the overview charts.
const ActivityMinutes = 60

// The series of an Activity the server feeds and the overview draws.
const (
	SeriesProcessedInbound  = "processed_inbound"
	SeriesProcessedOutbound = "processed_outbound"
	SeriesHubSpotCalls      = "hubspot_calls"
	SeriesHubSpot429        = "hubspot_429"
	SeriesWebhookSigFailed  = "webhook_signature_failures"
	SeriesBudgetDenied      = "budget_denied"
)

// Activity counts events per minute over the last ActivityMinutes, in memory:
// what this process did (each replica counts its own; a restart starts
// empty). The server feeds it where it counts the matching Prometheus
// counters. Safe for concurrent use; the zero value is not: use NewActivity.
type Activity struct {
	now func() time.Time

	mu     sync.Mutex
	series map[string]*minuteRing
}

// NewActivity returns an empty Activity reading the clock now (time.Now when nil).
func NewActivity(now func() time.Time) *Activity {
	if now == nil {
		now = time.Now
	}
	return &Activity{now: now, series: map[string]*minuteRing{}}
}

// minuteRing holds per-minute counts; counts[m % ActivityMinutes] is minute m
// (unix minutes) while stamp[...] == m.
type minuteRing struct {
	counts [ActivityMinutes]int64
	stamp  [ActivityMinutes]int64
}

// Add counts n in series at the current minute.
func (a *Activity) Add(series string, n int) {
	if a == nil || n == 0 {
		return
	}
	m := a.now().Unix() / 60
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.series[series]
	if r == nil {
		r = &minuteRing{}
		a.series[series] = r
	}
	i := m % ActivityMinutes
	if r.stamp[i] != m {
		r.stamp[i], r.counts[i] = m, 0
	}
	r.counts[i] += int64(n)
}

// ActivitySnapshot is the last ActivityMinutes minutes of every series,
// oldest minute first; the last minute is the current, partial one.
type ActivitySnapshot struct {
	// Start is the first minute.
	Start  time.Time          `json:"start"`
	Series map[string][]int64 `json:"series"`
}

// Snapshot returns the counts of the last ActivityMinutes minutes; every
// named series is present, zeros when nothing was counted.
func (a *Activity) Snapshot(names ...string) ActivitySnapshot {
	m := a.now().Unix() / 60
	first := m - ActivityMinutes + 1
	out := ActivitySnapshot{Start: time.Unix(first*60, 0).UTC(), Series: map[string][]int64{}}
	for _, n := range names {
		out.Series[n] = make([]int64, ActivityMinutes)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for name, r := range a.series {
		s := out.Series[name]
		if s == nil {
			s = make([]int64, ActivityMinutes)
			out.Series[name] = s
		}
		for k := range int64(ActivityMinutes) {
			mm := first + k
			if i := mm % ActivityMinutes; r.stamp[i] == mm {
				s[k] = r.counts[i]
			}
		}
	}
	return out
}
