package outbound

import (
	"maps"
	"sync"
	"sync/atomic"
)

// Metrics counts what workers did. It is safe for concurrent use; several
// workers may share one. Export it by reading Snapshot periodically (the
// counters only grow, so they map onto Prometheus counters directly).
type Metrics struct {
	mu    sync.Mutex
	calls map[CallLabel]int64

	coalesced, skipped, superseded, completed, retried, dead, failed, released, held atomic.Int64
	adopted, leaseLost, rateLimited, budgetDenied, budgetBooked, splits              atomic.Int64
}

// CallLabel labels HubSpot calls: Op is the plan operation ("update",
// "upsert", "create", "archive", "resolve_archive", "resolve_upsert", and
// "read_gone" for the read of an object an update met 404 for, "read_owner"
// for the read that tells whose object an upsert resolved two records to),
// Outcome is "ok", "partial" (207) or the hubspot.Kind of the failure
// ("rate_limited", "retryable", "conflict", "validation", "not_found",
// "auth", "permanent"), or "canceled".
type CallLabel struct {
	Op      string
	Outcome string
}

// MetricsSnapshot is a copy of the counters at one moment. Record counts are
// in events.
type MetricsSnapshot struct {
	// Calls counts HubSpot calls by operation and outcome.
	Calls map[CallLabel]int64
	// Coalesced counts events that rode along with another event of their record.
	Coalesced int64
	// Skipped counts events completed without a call; Completed counts all
	// completed events; Superseded counts the skipped events that were not
	// newer than the state HubSpot already had (re-queued or late events).
	Skipped, Superseded, Completed int64
	// Retried counts events scheduled for another attempt; Dead those that ran
	// out of attempts; Failed those failed at once (validation, unmapped).
	Retried, Dead, Failed int64
	// Released counts events given back without using an attempt (budget, stop, auth, adoption).
	Released int64
	// Held counts the released events that were held to fill a later call
	// while the budget was short (Config.Hold).
	Held int64
	// Adopted counts records linked to an existing HubSpot object after a 409.
	Adopted int64
	// LeaseLost counts events whose lease expired before the worker settled them.
	LeaseLost int64
	// RateLimited counts 429 answers; BudgetDenied refused reservations;
	// BudgetBooked calls made at an instant booked ahead (Config.BudgetAhead);
	// Splits batches halved to isolate a rejected input.
	RateLimited, BudgetDenied, BudgetBooked, Splits int64
}

// NewMetrics returns zeroed counters.
func NewMetrics() *Metrics { return &Metrics{calls: map[CallLabel]int64{}} }

func (m *Metrics) add(c *atomic.Int64, n int64) { c.Add(n) }

func (m *Metrics) call(op Op, outcome string) {
	m.mu.Lock()
	m.calls[CallLabel{op.String(), outcome}]++
	m.mu.Unlock()
}

// TotalCalls is the number of HubSpot calls made, whatever their outcome.
func (s MetricsSnapshot) TotalCalls() int64 {
	var n int64
	for _, v := range s.Calls {
		n += v
	}
	return n
}

// Snapshot copies the counters.
func (m *Metrics) Snapshot() MetricsSnapshot {
	m.mu.Lock()
	calls := maps.Clone(m.calls)
	m.mu.Unlock()
	return MetricsSnapshot{
		Calls:        calls,
		Coalesced:    m.coalesced.Load(),
		Skipped:      m.skipped.Load(),
		Superseded:   m.superseded.Load(),
		Completed:    m.completed.Load(),
		Retried:      m.retried.Load(),
		Dead:         m.dead.Load(),
		Failed:       m.failed.Load(),
		Released:     m.released.Load(),
		Held:         m.held.Load(),
		Adopted:      m.adopted.Load(),
		LeaseLost:    m.leaseLost.Load(),
		RateLimited:  m.rateLimited.Load(),
		BudgetDenied: m.budgetDenied.Load(),
		BudgetBooked: m.budgetBooked.Load(),
		Splits:       m.splits.Load(),
	}
}
