package dispatch

import (
	"net/http"
	"sync/atomic"
)

// Metrics counts what the Publisher and the Handler did. Safe for concurrent
// use; export it by reading Snapshot (the counters only grow).
type Metrics struct {
	published, publishFailed, republished atomic.Int64
	deliveries                            [len(DeliveryCodes)]atomic.Int64
}

// DeliveryCodes are the answers the Handler counts by: 200 done (or a
// no-op), 503 retry later, 489 dead-lettered, 401 refused signature, 400
// anything else the sender got wrong (oversized, unparsable), 500 internal.
var DeliveryCodes = [...]int{http.StatusOK, http.StatusServiceUnavailable, StatusNonRetryable, http.StatusUnauthorized, http.StatusBadRequest, http.StatusInternalServerError}

// MetricsSnapshot is a copy of the counters.
type MetricsSnapshot struct {
	// Published counts messages QStash accepted; PublishFailed refused or
	// failed publishes; Republished the sweep's new generations.
	Published, PublishFailed, Republished int64
	// Deliveries counts the Handler's answers by status code (DeliveryCodes).
	Deliveries map[int]int64
}

// NewMetrics returns zeroed counters.
func NewMetrics() *Metrics { return &Metrics{} }

// Snapshot copies the counters.
func (m *Metrics) Snapshot() MetricsSnapshot {
	s := MetricsSnapshot{Published: m.published.Load(), PublishFailed: m.publishFailed.Load(),
		Republished: m.republished.Load(), Deliveries: map[int]int64{}}
	for i, c := range DeliveryCodes {
		s.Deliveries[c] = m.deliveries[i].Load()
	}
	return s
}

func (m *Metrics) delivered(code int) {
	for i, c := range DeliveryCodes {
		if c == code {
			m.deliveries[i].Add(1)
			return
		}
	}
	if code >= 400 && code < 500 {
		m.deliveries[4].Add(1)
	} else {
		m.deliveries[5].Add(1)
	}
}
