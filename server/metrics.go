package server

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	hubsync "github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/store"
)

// statsTimeout bounds the store query behind one scrape.
const statsTimeout = 5 * time.Second

// Metrics names exposed on GET /metrics.
const (
	MetricEventsEnqueued      = "hubsync_events_enqueued_total"
	MetricEventsClaimed       = "hubsync_events_claimed_total"
	MetricEventsProcessed     = "hubsync_events_processed_total"
	MetricEventsFailed        = "hubsync_events_failed_total"
	MetricEventsRetried       = "hubsync_events_retried_total"
	MetricEventsReleased      = "hubsync_events_released_total"
	MetricQueueDepth          = "hubsync_queue_depth"
	MetricOldestPendingAge    = "hubsync_queue_oldest_pending_age_seconds"
	MetricStatsUp             = "hubsync_queue_stats_up"
	MetricHubSpotCalls        = "hubsync_hubspot_calls_total"
	MetricHubSpotRateLimited  = "hubsync_hubspot_rate_limited_total"
	MetricHubSpotRemaining    = "hubsync_hubspot_ratelimit_remaining"
	MetricHubSpotDailyRemain  = "hubsync_hubspot_ratelimit_daily_remaining"
	MetricBudgetReservations  = "hubsync_budget_reservations_total"
	MetricBudgetTokens        = "hubsync_budget_tokens_total"
	MetricWebhookRequests     = "hubsync_webhook_requests_total"
	MetricWebhookVerifyFailed = "hubsync_webhook_verification_failures_total"
)

// instruments are the process's Prometheus metrics, on a registry of their own
// so that embedding applications keep theirs clean.
type instruments struct {
	reg *prometheus.Registry

	enqueued, claimed, processed, failed, retried, released *prometheus.CounterVec

	hubspotCalls        *prometheus.CounterVec
	hubspotRateLimited  prometheus.Counter
	hubspotRemaining    prometheus.Gauge
	hubspotDailyRemain  prometheus.Gauge
	budgetReservations  *prometheus.CounterVec
	budgetTokens        *prometheus.CounterVec
	webhookRequests     *prometheus.CounterVec
	webhookVerifyFailed prometheus.Counter
}

func newInstruments(st store.Store, log *slog.Logger) *instruments {
	reg := prometheus.NewRegistry()
	dk := []string{"direction", "key"}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	in := &instruments{
		reg:                 reg,
		enqueued:            counter(MetricEventsEnqueued, "Events enqueued (inserted, duplicates excluded) by this process, by queue and exact source/destination.", dk...),
		claimed:             counter(MetricEventsClaimed, "Events claimed (leased) by this process.", dk...),
		processed:           counter(MetricEventsProcessed, "Events completed by this process.", dk...),
		failed:              counter(MetricEventsFailed, "Events that became dead letters in this process.", dk...),
		retried:             counter(MetricEventsRetried, "Failed attempts scheduled for a retry by this process.", dk...),
		released:            counter(MetricEventsReleased, "Leased events released without an attempt counted (stop, no budget).", dk...),
		hubspotCalls:        counter(MetricHubSpotCalls, "HubSpot API responses, by HTTP status code.", "code"),
		hubspotRateLimited:  prometheus.NewCounter(prometheus.CounterOpts{Name: MetricHubSpotRateLimited, Help: "HubSpot API answers with 429 Too Many Requests."}),
		hubspotRemaining:    prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricHubSpotRemaining, Help: "X-HubSpot-RateLimit-Remaining of the latest HubSpot answer that carried it."}),
		hubspotDailyRemain:  prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricHubSpotDailyRemain, Help: "X-HubSpot-RateLimit-Daily-Remaining of the latest HubSpot answer that carried it."}),
		budgetReservations:  counter(MetricBudgetReservations, "API budget reservations, by key and outcome (granted, denied, error).", "key", "outcome"),
		budgetTokens:        counter(MetricBudgetTokens, "API calls reserved from the budget (granted reservations only).", "key"),
		webhookRequests:     counter(MetricWebhookRequests, "Webhook deliveries received, by HTTP answer code.", "code"),
		webhookVerifyFailed: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricWebhookVerifyFailed, Help: "Webhook deliveries refused because the signature or its timestamp did not verify (401)."}),
	}
	// The default queues' series exist from the start, so dashboards and alerts
	// see zeros rather than nothing.
	for _, q := range defaultQueues {
		for _, v := range []*prometheus.CounterVec{in.enqueued, in.claimed, in.processed, in.failed, in.retried, in.released} {
			v.WithLabelValues(string(q.Direction), q.Key)
		}
	}
	in.hubspotCalls.WithLabelValues("200")
	in.webhookRequests.WithLabelValues("200")
	reg.MustRegister(in.enqueued, in.claimed, in.processed, in.failed, in.retried, in.released,
		in.hubspotCalls, in.hubspotRateLimited, in.hubspotRemaining, in.hubspotDailyRemain,
		in.budgetReservations, in.budgetTokens, in.webhookRequests, in.webhookVerifyFailed,
		&statsCollector{st: st, log: log},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return in
}

func (in *instruments) handler() http.Handler {
	return promhttp.HandlerFor(in.reg, promhttp.HandlerOpts{Registry: in.reg})
}

// onHubSpotResponse is the HubSpot client's OnResponse hook.
func (in *instruments) onHubSpotResponse(rl hubspot.RateLimit, code int) {
	in.hubspotCalls.WithLabelValues(strconv.Itoa(code)).Inc()
	if code == http.StatusTooManyRequests {
		in.hubspotRateLimited.Inc()
	}
	if rl.Present {
		if rl.Max > 0 {
			in.hubspotRemaining.Set(float64(rl.Remaining))
		}
		if rl.DailyMax > 0 {
			in.hubspotDailyRemain.Set(float64(rl.DailyRemaining))
		}
	}
}

// instrumentWebhooks counts webhook answers; a 401 is a verification failure.
func (in *instruments) instrumentWebhooks(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		in.webhookRequests.WithLabelValues(strconv.Itoa(sw.code)).Inc()
		if sw.code == http.StatusUnauthorized {
			in.webhookVerifyFailed.Inc()
		}
	})
}

type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// meteredBudget counts reservations of the budget it wraps.
type meteredBudget struct {
	budget.Budget
	in *instruments
}

func (b meteredBudget) Reserve(ctx context.Context, key string, tokens int) (budget.Reservation, error) {
	r, err := b.Budget.Reserve(ctx, key, tokens)
	switch {
	case err != nil:
		b.in.budgetReservations.WithLabelValues(key, "error").Inc()
	case r.Granted:
		b.in.budgetReservations.WithLabelValues(key, "granted").Inc()
		b.in.budgetTokens.WithLabelValues(key).Add(float64(tokens))
	default:
		b.in.budgetReservations.WithLabelValues(key, "denied").Inc()
	}
	return r, err
}

// defaultQueues are the queues of a standard deployment: HubSpot both ways and
// the internal queue.
var defaultQueues = []QueueMetrics{
	{Direction: store.DirectionInbound, Key: hubsync.SyncSourceHubSpot},
	{Direction: store.DirectionOutbound, Key: hubsync.SyncSourceHubSpot},
	{Direction: store.DirectionInternal, Key: ""},
}

// statsCollector turns store.Stats into queue depth and age gauges at scrape time,
// so every replica reports the shared database's state.
type statsCollector struct {
	st  store.Store
	log *slog.Logger
}

var (
	descDepth = prometheus.NewDesc(MetricQueueDepth, "Events in each queue by exact source/destination and status.", []string{"direction", "key", "status"}, nil)
	descAge   = prometheus.NewDesc(MetricOldestPendingAge, "Age of the oldest pending event of each queue and source/destination (0 when none).", []string{"direction", "key"}, nil)
	descUp    = prometheus.NewDesc(MetricStatsUp, "1 when the queue statistics could be read from the database at this scrape.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descDepth
	ch <- descAge
	ch <- descUp
}

// Collect implements prometheus.Collector.
func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	m, err := LoadMetrics(ctx, c.st)
	if err != nil {
		c.log.Warn("metrics: read queue stats", "err", err)
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 1)
	queues := m.Queues
	for _, d := range defaultQueues {
		if !slices.ContainsFunc(queues, func(q QueueMetrics) bool { return q.Direction == d.Direction && q.Key == d.Key }) {
			queues = append(queues, d)
		}
	}
	for _, q := range queues {
		for _, s := range allStatuses {
			ch <- prometheus.MustNewConstMetric(descDepth, prometheus.GaugeValue, float64(q.Counts[s]), string(q.Direction), q.Key, string(s))
		}
		ch <- prometheus.MustNewConstMetric(descAge, prometheus.GaugeValue, q.OldestPendingAgeSeconds, string(q.Direction), q.Key)
	}
}
