package server

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/dispatch"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/server/ui"
	"github.com/hubsync/hubsync/store"
)

// statsTimeout bounds the store query behind one scrape.
const statsTimeout = 5 * time.Second

// StatsTTLDefault is how long the queue statistics behind the /metrics gauges
// are reused: they cost a GROUP BY over every queue, which must not run once per
// scrape per scraper.
const StatsTTLDefault = 5 * time.Second

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
	MetricWebhookRejected     = "hubsync_webhook_events_rejected_total"
	MetricWebhookEchoes       = "hubsync_webhook_echoes_total"
	MetricAuthFailures        = "hubsync_auth_failures_total"
	MetricLastClaim           = "hubsync_queue_last_claim_timestamp_seconds"
	MetricEventWait           = "hubsync_event_wait_seconds"
	MetricHubSpotDuration     = "hubsync_hubspot_request_duration_seconds"
	MetricWebhookDuration     = "hubsync_webhook_request_duration_seconds"
	MetricBudgetLimit         = "hubsync_budget_limit_calls"
	MetricBudgetCallsToday    = "hubsync_budget_calls_today"
	MetricBudgetPaused        = "hubsync_budget_paused"
	MetricBudgetUp            = "hubsync_budget_stats_up"
	MetricBudgetWindowCalls   = "hubsync_budget_window_calls"
	MetricBudgetBookedCalls   = "hubsync_budget_booked_calls"
	MetricBudgetLastShort     = "hubsync_budget_last_short_timestamp_seconds"

	// The outbound worker's own counters (outbound.Metrics), read at scrape time.
	MetricOutboundCalls        = "hubsync_outbound_hubspot_calls_total"
	MetricOutboundRateLimited  = "hubsync_outbound_rate_limited_total"
	MetricOutboundCoalesced    = "hubsync_outbound_coalesced_events_total"
	MetricOutboundEvents       = "hubsync_outbound_events_total"
	MetricOutboundAdopted      = "hubsync_outbound_adopted_total"
	MetricOutboundLeaseLost    = "hubsync_outbound_lease_lost_total"
	MetricOutboundBudgetDenied = "hubsync_outbound_budget_denied_total"
	MetricOutboundBudgetBooked = "hubsync_outbound_budget_booked_total"
	MetricOutboundSplits       = "hubsync_outbound_batch_splits_total"
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
	webhookRejected     *prometheus.CounterVec
	webhookEchoes       prometheus.Counter
	authFailures        *prometheus.CounterVec
	lastClaim           *prometheus.GaugeVec
	eventWait           *prometheus.HistogramVec
	hubspotDuration     *prometheus.HistogramVec
	webhookDuration     prometheus.Histogram
	budgetLimit         *prometheus.GaugeVec
	stats               *statsCollector

	// activity is the last hour per minute, for the dashboard's charts.
	activity *ui.Activity

	// outbound is shared by the outbound worker (Config.Metrics) and read by
	// outboundCollector at each scrape.
	outbound *outbound.Metrics
	// dispatch is shared by the QStash publisher and worker endpoint.
	dispatch *dispatch.Metrics
}

func newInstruments(st store.Store, log *slog.Logger, statsTTL time.Duration) *instruments {
	reg := prometheus.NewRegistry()
	dk := []string{"direction", "key"}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	in := &instruments{
		reg:                 reg,
		enqueued:            counter(MetricEventsEnqueued, "Events enqueued (inserted, duplicates excluded) and committed by this process, by queue and exact source/destination. An enqueue inside a caller's transaction counts once seen committed: when claimed here, or read back by a queue statistics reading once 30 s old.", dk...),
		claimed:             counter(MetricEventsClaimed, "Events claimed (leased) by this process.", dk...),
		processed:           counter(MetricEventsProcessed, "Events completed by this process, and inbound events it stored already processed (webhook echoes of hubsync's own writes).", dk...),
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
		webhookRejected:     counter(MetricWebhookRejected, "Events of accepted webhook deliveries refused on their own (listed by GET /admin/rejected), by reason.", "reason"),
		webhookEchoes: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricWebhookEchoes,
			Help: "Webhook events recognised as echoes of hubsync's own writes (HUBSPOT_APP_ID) and stored processed, never claimed by the SyncWorker; duplicates excluded."}),
		authFailures: counter(MetricAuthFailures, "Requests refused for a missing or wrong bearer token, by area (api, admin).", "area"),
		lastClaim: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricLastClaim,
			Help: "Unix time of this process's latest claim that handed out at least one event, by queue and exact source/destination (absent until the first)."}, dk),
		eventWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricEventWait,
			Help:    "Time from an event becoming due (enqueued, or its retry time) to its claim by this process, by queue and exact source/destination.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}}, dk),
		hubspotDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricHubSpotDuration,
			Help:    "Time from sending a HubSpot API request to its answer's headers (or the transport failure), by HTTP method.",
			Buckets: []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}}, []string{"method"}),
		webhookDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricWebhookDuration,
			Help:    "Time to answer a webhook delivery (verify, parse, store), whatever the answer; HubSpot gives up after 5 s.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}}),
		budgetLimit: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricBudgetLimit,
			Help: "HubSpot calls the shared budget allows per window (window=\"10s\": the burst limit, \"1d\": the daily limit; absent when none), by key."}, []string{"key", "window"}),
		outbound: outbound.NewMetrics(),
		dispatch: dispatch.NewMetrics(),
		activity: ui.NewActivity(nil),
		stats:    &statsCollector{st: st, log: log, ttl: statsTTL, now: time.Now},
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
	in.authFailures.WithLabelValues(authAreaAPI)
	in.authFailures.WithLabelValues(authAreaAdmin)
	reg.MustRegister(in.enqueued, in.claimed, in.processed, in.failed, in.retried, in.released,
		in.hubspotCalls, in.hubspotRateLimited, in.hubspotRemaining, in.hubspotDailyRemain,
		in.budgetReservations, in.budgetTokens, in.webhookRequests, in.webhookVerifyFailed, in.webhookRejected, in.webhookEchoes, in.authFailures,
		in.lastClaim, in.eventWait, in.hubspotDuration, in.webhookDuration, in.budgetLimit,
		in.stats, outboundCollector{m: in.outbound}, dispatchCollector{m: in.dispatch},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return in
}

func (in *instruments) handler() http.Handler {
	return promhttp.HandlerFor(in.reg, promhttp.HandlerOpts{Registry: in.reg})
}

// onHubSpotResponse is the HubSpot client's OnResponse hook.
func (in *instruments) onHubSpotResponse(rl hubspot.RateLimit, code int) {
	in.hubspotCalls.WithLabelValues(strconv.Itoa(code)).Inc()
	in.activity.Add(ui.SeriesHubSpotCalls, 1)
	if code == http.StatusTooManyRequests {
		in.hubspotRateLimited.Inc()
		in.activity.Add(ui.SeriesHubSpot429, 1)
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
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		in.webhookDuration.Observe(time.Since(start).Seconds())
		in.webhookRequests.WithLabelValues(strconv.Itoa(sw.code)).Inc()
		if sw.code == http.StatusUnauthorized {
			in.webhookVerifyFailed.Inc()
			in.activity.Add(ui.SeriesWebhookSigFailed, 1)
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

// meteredBudget counts reservations of the budget it wraps. It is a
// Scheduler, so that the outbound worker can book ahead through it.
type meteredBudget struct {
	budget.Budget
	in *instruments
}

var _ budget.Scheduler = meteredBudget{}

// meterBudget wraps b to count its reservations. A budget.SQL keeps, through the
// wrapper, what the outbound worker reads to decide whether to hold its
// calls (meteredWindow).
func meterBudget(b budget.Budget, in *instruments) budget.Budget {
	m := meteredBudget{Budget: b, in: in}
	if sb, ok := b.(*budget.SQL); ok {
		return meteredWindow{meteredBudget: m, sql: sb}
	}
	return m
}

// meteredWindow is a meteredBudget over a budget.SQL. It also says how full
// the shared window is and when it was last short, and records when a worker
// found it short (outbound.Config.Hold): the outbound worker looks for these
// methods on its Budget, and without them it only holds after its own calls
// were refused or booked ahead.
type meteredWindow struct {
	meteredBudget
	sql *budget.SQL
}

func (b meteredWindow) WindowUse(ctx context.Context, key string) (budget.WindowUse, error) {
	return b.sql.WindowUse(ctx, key)
}

func (b meteredWindow) NoteShort(ctx context.Context, key string) error {
	return b.sql.NoteShort(ctx, key)
}

func (b meteredBudget) Reserve(ctx context.Context, key string, tokens int) (budget.Reservation, error) {
	r, err := b.Budget.Reserve(ctx, key, tokens)
	b.count(key, tokens, r, err)
	return r, err
}

// Schedule books ahead when the wrapped budget can (budget.Scheduler; both of
// newBudget's are), and otherwise reserves for now.
func (b meteredBudget) Schedule(ctx context.Context, key string, tokens int, within time.Duration) (budget.Reservation, error) {
	s, ok := b.Budget.(budget.Scheduler)
	if !ok {
		return b.Reserve(ctx, key, tokens)
	}
	r, err := s.Schedule(ctx, key, tokens, within)
	b.count(key, tokens, r, err)
	return r, err
}

// Paused asks the wrapped budget when it can (budget.Scheduler); a budget
// that cannot book is never asked.
func (b meteredBudget) Paused(ctx context.Context, key string) (time.Duration, error) {
	if s, ok := b.Budget.(budget.Scheduler); ok {
		return s.Paused(ctx, key)
	}
	return 0, nil
}

func (b meteredBudget) count(key string, tokens int, r budget.Reservation, err error) {
	switch {
	case err != nil:
		b.in.budgetReservations.WithLabelValues(key, "error").Inc()
	case r.Granted:
		b.in.budgetReservations.WithLabelValues(key, "granted").Inc()
		b.in.budgetTokens.WithLabelValues(key).Add(float64(tokens))
	default:
		b.in.budgetReservations.WithLabelValues(key, "denied").Inc()
		b.in.activity.Add(ui.SeriesBudgetDenied, 1)
	}
}

// processedSeries is the dashboard series counting the processed events of dir.
func processedSeries(dir store.Direction) string {
	if dir == store.DirectionInbound {
		return ui.SeriesProcessedInbound
	}
	if dir == store.DirectionOutbound {
		return ui.SeriesProcessedOutbound
	}
	return "processed_internal"
}

// defaultQueues are the queues of a standard deployment: HubSpot both ways and
// the internal queue.
var defaultQueues = []ops.QueueMetrics{
	{Direction: store.DirectionInbound, Key: outbox.SyncSourceHubSpot},
	{Direction: store.DirectionOutbound, Key: outbox.SyncSourceHubSpot},
	{Direction: store.DirectionInternal, Key: ""},
}

// statsCollector turns store.Stats into queue depth and age gauges at scrape
// time, so every replica reports the shared database's state. The statistics
// are read at most once per ttl (one reading at a time; concurrent scrapes wait
// for it and share it), so scrapers cannot load the database: the gauges, the
// oldest pending age included, may be up to ttl old.
type statsCollector struct {
	st  store.Store
	log *slog.Logger
	ttl time.Duration
	now func() time.Time
	// confirm, when set, counts with each reading the enqueues of callers'
	// transactions that have committed since the last one.
	confirm func(context.Context)

	mu  sync.Mutex // held while reading, so one reading runs at a time
	at  time.Time  // when m and err were read; zero: never
	m   ops.Metrics
	err error
}

// load returns the cached statistics, reading them again when they are older
// than ttl.
func (c *statsCollector) load() (ops.Metrics, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && c.now().Sub(c.at) < c.ttl {
		return c.m, c.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	if c.confirm != nil {
		c.confirm(ctx)
	}
	c.m, c.err = ops.LoadMetrics(ctx, c.st)
	c.at = c.now()
	if c.err != nil {
		c.log.Warn("metrics: read queue stats", "err", c.err)
	}
	return c.m, c.err
}

var (
	descDepth = prometheus.NewDesc(MetricQueueDepth, "Events in each queue by exact source/destination and status.", []string{"direction", "key", "status"}, nil)
	descAge   = prometheus.NewDesc(MetricOldestPendingAge, "Age of the oldest pending event of each queue and source/destination (0 when none).", []string{"direction", "key"}, nil)
	descUp    = prometheus.NewDesc(MetricStatsUp, "1 when the queue statistics could be read from the database at their last reading (at most StatsTTL ago).", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descDepth
	ch <- descAge
	ch <- descUp
}

// Collect implements prometheus.Collector.
func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	m, err := c.load()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 1)
	queues := m.Queues
	for _, d := range defaultQueues {
		if !slices.ContainsFunc(queues, func(q ops.QueueMetrics) bool { return q.Direction == d.Direction && q.Key == d.Key }) {
			queues = append(queues, d)
		}
	}
	for _, q := range queues {
		for _, s := range ops.Statuses() {
			ch <- prometheus.MustNewConstMetric(descDepth, prometheus.GaugeValue, float64(q.Counts[s]), string(q.Direction), q.Key, string(s))
		}
		ch <- prometheus.MustNewConstMetric(descAge, prometheus.GaugeValue, q.OldestPendingAgeSeconds, string(q.Direction), q.Key)
	}
}

// outboundCollector exports the outbound worker's counters (outbound.Metrics)
// at scrape time. They only grow, so they are Prometheus counters; event
// counts are in events (a record's coalesced events count one each).
type outboundCollector struct{ m *outbound.Metrics }

var (
	descOutboundCalls        = prometheus.NewDesc(MetricOutboundCalls, "HubSpot calls of the outbound worker, by plan operation (upsert, update, create, archive, resolve_archive, resolve_upsert) and outcome (ok, partial, rate_limited, retryable, conflict, validation, not_found, auth, permanent, canceled).", []string{"op", "outcome"}, nil)
	descOutboundRateLimited  = prometheus.NewDesc(MetricOutboundRateLimited, "429 answers the outbound worker met (the budget should keep this at 0).", nil, nil)
	descOutboundCoalesced    = prometheus.NewDesc(MetricOutboundCoalesced, "Outbound events that rode along with another event of their record instead of costing a write of their own.", nil, nil)
	descOutboundEvents       = prometheus.NewDesc(MetricOutboundEvents, "Outbound events settled by the worker, by result: completed (processed, skipped included), skipped (completed without a call), superseded (skipped because HubSpot already had a newer version: a re-queued or late event), retried, dead (out of attempts), failed (failed at once), released (given back without using an attempt), held (released to fill a later call while the budget is short; counted in released too).", []string{"result"}, nil)
	descOutboundAdopted      = prometheus.NewDesc(MetricOutboundAdopted, "Records linked to an existing HubSpot object after a 409 conflict.", nil, nil)
	descOutboundLeaseLost    = prometheus.NewDesc(MetricOutboundLeaseLost, "Outbound events whose lease expired before the worker settled them.", nil, nil)
	descOutboundBudgetDenied = prometheus.NewDesc(MetricOutboundBudgetDenied, "Budget reservations of the outbound worker that were refused (its events wait for room).", nil, nil)
	descOutboundBudgetBooked = prometheus.NewDesc(MetricOutboundBudgetBooked, "Budget grants the outbound worker booked ahead when the window was full (its cycle kept its records and called at the booked instant).", nil, nil)
	descOutboundSplits       = prometheus.NewDesc(MetricOutboundSplits, "Batch calls halved to isolate an input HubSpot rejected.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c outboundCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descOutboundCalls, descOutboundRateLimited, descOutboundCoalesced, descOutboundEvents,
		descOutboundAdopted, descOutboundLeaseLost, descOutboundBudgetDenied, descOutboundBudgetBooked, descOutboundSplits} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c outboundCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.m.Snapshot()
	calls := s.Calls
	// The common series exist from the start, so dashboards see zeros.
	for _, op := range []string{outbound.OpUpsert.String(), outbound.OpUpdate.String()} {
		if _, ok := calls[outbound.CallLabel{Op: op, Outcome: "ok"}]; !ok {
			calls[outbound.CallLabel{Op: op, Outcome: "ok"}] = 0
		}
	}
	for l, n := range calls {
		ch <- prometheus.MustNewConstMetric(descOutboundCalls, prometheus.CounterValue, float64(n), l.Op, l.Outcome)
	}
	counter := func(d *prometheus.Desc, n int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(n), labels...)
	}
	counter(descOutboundRateLimited, s.RateLimited)
	counter(descOutboundCoalesced, s.Coalesced)
	counter(descOutboundEvents, s.Completed, "completed")
	counter(descOutboundEvents, s.Skipped, "skipped")
	counter(descOutboundEvents, s.Superseded, "superseded")
	counter(descOutboundEvents, s.Retried, "retried")
	counter(descOutboundEvents, s.Dead, "dead")
	counter(descOutboundEvents, s.Failed, "failed")
	counter(descOutboundEvents, s.Released, "released")
	counter(descOutboundEvents, s.Held, "held")
	counter(descOutboundAdopted, s.Adopted)
	counter(descOutboundLeaseLost, s.LeaseLost)
	counter(descOutboundBudgetDenied, s.BudgetDenied)
	counter(descOutboundBudgetBooked, s.BudgetBooked)
	counter(descOutboundSplits, s.Splits)
}
