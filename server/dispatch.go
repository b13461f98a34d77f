package server

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hubsync/hubsync/dispatch"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/qstash"
	"github.com/hubsync/hubsync/store"
)

// The dispatch modes (Config.Dispatch).
const (
	DispatchPoll   = "poll"
	DispatchQStash = "qstash"
)

// Defaults of the QStash flow control (seed 002).
const (
	// FlowControlRateSharePercent is the default FlowControlRate, as a share
	// of the HubSpot budget (RateLimit per 10 s) over FlowControlPeriod:
	// QStash is paced below the budget, leaving room for the SyncWorker's
	// reads, since each delivery the budget refuses is a 503 that costs a
	// QStash attempt.
	FlowControlRateSharePercent   = 80
	FlowControlPeriodDefault      = qstash.FlowPeriodDefault
	FlowControlParallelismDefault = qstash.FlowParallelismDefault
)

// flowControlRateDefault is FlowControlRateSharePercent of rateLimit calls
// per 10 s, over period; at least 1.
func flowControlRateDefault(rateLimit int, period time.Duration) int {
	return max(1, int(int64(rateLimit)*FlowControlRateSharePercent/100*int64(period)/int64(10*time.Second)))
}

// CronReconcilePath is the reconciliation cron's route (GET, Bearer CronSecret).
const CronReconcilePath = "/api/cron/reconcile"

func (c Config) dispatchDefaults() Config {
	c.Dispatch = cmp.Or(c.Dispatch, DispatchPoll)
	c.FlowControlKey = cmp.Or(c.FlowControlKey, strings.ReplaceAll(c.BudgetKey, ":", "-"))
	c.FlowControlPeriod = cmp.Or(c.FlowControlPeriod, FlowControlPeriodDefault)
	if c.FlowControlRate == 0 && c.FlowControlPeriod > 0 {
		c.FlowControlRate = flowControlRateDefault(c.RateLimit, c.FlowControlPeriod)
	}
	c.FlowControlParallelism = cmp.Or(c.FlowControlParallelism, FlowControlParallelismDefault)
	return c
}

// qstashMode reports whether outbound events are pushed through QStash.
func (c Config) qstashMode() bool { return c.Dispatch == DispatchQStash }

func (c Config) validateDispatch() []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	switch c.Dispatch {
	case DispatchPoll, DispatchQStash:
	default:
		add("Dispatch %q is not a dispatch mode; use %s (workers poll the database) or %s (push through QStash)", c.Dispatch, DispatchPoll, DispatchQStash)
	}
	if c.CronSecret != "" && len(c.CronSecret) < TokenMinLength {
		add("CronSecret is %d characters long; use a random secret of at least %d characters (e.g. openssl rand -hex 32)", len(c.CronSecret), TokenMinLength)
	}
	if c.FlowControlRate < 0 {
		add("FlowControlRate is %d; use a positive number of deliveries per FlowControlPeriod (0 means %d%% of RateLimit)", c.FlowControlRate, FlowControlRateSharePercent)
	}
	if c.FlowControlParallelism < 0 {
		add("FlowControlParallelism is %d; use a positive number of deliveries at once (0 means %d)", c.FlowControlParallelism, FlowControlParallelismDefault)
	}
	if c.FlowControlPeriod < 0 || (c.FlowControlPeriod > 0 && c.FlowControlPeriod%time.Second != 0) {
		add("FlowControlPeriod is %s; use a positive whole number of seconds such as 10s (0 means %s)", c.FlowControlPeriod, FlowControlPeriodDefault)
	}
	if len(c.QStashRetryDelay) > 200 || strings.ContainsAny(c.QStashRetryDelay, "\r\n") {
		add("QStashRetryDelay is not a one-line expression; use e.g. \"pow(2, retried) * 1000\" or leave it empty")
	}
	if !c.qstashMode() {
		return errs
	}
	if u, err := url.Parse(c.QStashURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		add("QStashURL %q is not an absolute http(s) URL; set it to QStash's base URL (or the emulator's, hubsync sim -qstash)", c.QStashURL)
	}
	if c.QStashToken == "" {
		add("QStashToken is empty; set it to the QStash token (from the QStash console)")
	}
	if c.QStashCurrentSigningKey == "" {
		add("QStashCurrentSigningKey is empty; set it to QStash's current signing key, which verifies deliveries")
	}
	if u, err := url.Parse(c.WorkerURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		add("WorkerURL %q is not an absolute http(s) URL; set it to the public URL QStash calls, e.g. https://crm.example.com%s", c.WorkerURL, dispatch.WorkerPath)
	}
	if c.DisableOutboundWorker {
		add("DisableOutboundWorker is set with Dispatch %s; the outbound worker serves the deliveries, so leave it on or use Dispatch %s", DispatchQStash, DispatchPoll)
	}
	return errs
}

// qstashParts builds qstash mode: the publisher (a part) and the signed
// worker endpoint, which pushes through w (whose loops are not started).
func (s *Server) qstashParts(mux *http.ServeMux, st store.Store, w *outbound.Worker) (*dispatch.PublishService, error) {
	cfg := s.cfg
	client, err := qstash.NewClient(qstash.Config{URL: cfg.QStashURL, Token: cfg.QStashToken})
	if err != nil {
		return nil, err
	}
	pub, err := dispatch.NewPublisher(dispatch.PublisherConfig{
		Store: st, QStash: client, WorkerURL: cfg.WorkerURL, Retry: cfg.Store.Retry, Retries: cfg.QStashRetries, RetryDelay: cfg.QStashRetryDelay,
		FlowControl: qstash.FlowControl{Key: cfg.FlowControlKey, Rate: cfg.FlowControlRate, Period: cfg.FlowControlPeriod, Parallelism: cfg.FlowControlParallelism},
		Metrics:     s.in.dispatch, Logger: s.log, Now: st.Now,
	})
	if err != nil {
		return nil, err
	}
	v, err := qstash.NewVerifier(qstash.VerifierConfig{CurrentSigningKey: cfg.QStashCurrentSigningKey, NextSigningKey: cfg.QStashNextSigningKey, URL: cfg.WorkerURL})
	if err != nil {
		return nil, err
	}
	h, err := dispatch.NewHandler(dispatch.HandlerConfig{Store: st, Worker: w, Verifier: v, Metrics: s.in.dispatch, Logger: s.log, Wake: pub.Notify})
	if err != nil {
		return nil, err
	}
	// Not under /api: its authentication is the signature, not a token.
	mux.Handle("POST "+dispatch.WorkerPath, h)
	s.parts = append(s.parts, part{"qstash-publisher", pub.Start, pub.Stop})
	return pub, nil
}

// scheduler is the reconciliation repair of the configured dispatch mode.
func (s *Server) scheduler(pub *dispatch.PublishService) ops.Scheduler {
	if pub == nil {
		return ops.PollScheduler{}
	}
	return dispatch.Rescheduler{Destination: "hubspot", Wake: pub.Notify, Metrics: s.in.dispatch}
}

// cronReconcile serves GET /api/cron/reconcile (seed 002's cron): with
// Authorization: Bearer CronSecret it runs the reconciliation sweep with its
// repair and answers {"checked": N, "scheduled": M}; 401 without the secret,
// 404 when no CronSecret is configured, 405 for any other method (HEAD
// included: only GET runs the sweep). It is registered on the main mux,
// beside the /api guard: its caller (a cron service) holds the cron secret,
// not an API token.
func (s *Server) cronReconcile(sched ops.Scheduler) http.Handler {
	auth := &bearerAuth{area: authAreaCron, realm: "hubsync cron", tokens: [][]byte{[]byte(s.cfg.CronSecret)}, failures: s.failures}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.CronSecret == "" {
			http.NotFound(w, r)
			return
		}
		if !auth.check(w, r) {
			return
		}
		if r.Method != http.MethodGet {
			// HEAD too: a probe of the route must not run the sweep.
			w.Header().Set("Allow", "GET")
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "the reconciliation sweep is GET "+CronReconcilePath+" (as Vercel Cron sends it)")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
		defer cancel()
		res, err := ops.Repair(ctx, s.st, ops.ReconcileRequest{OlderThan: s.cfg.ReconcileAfter.String(), Limit: ops.ReconcileLimitDefault}, sched)
		if err != nil {
			s.log.Error("cron reconcile failed", "err", err)
			writeError(w, http.StatusInternalServerError, "internal", "reconcile failed")
			return
		}
		if res.Scheduled > 0 {
			s.log.Info("cron reconcile scheduled events again", "checked", res.Checked, "scheduled", res.Scheduled)
		}
		writeJSON(w, http.StatusOK, map[string]int{"checked": res.Checked, "scheduled": res.Scheduled})
	})
}

// Metric names of qstash mode.
const (
	MetricQStashPublished     = "hubsync_qstash_published_total"
	MetricQStashPublishFailed = "hubsync_qstash_publish_failures_total"
	MetricQStashRepublished   = "hubsync_qstash_republished_total"
	MetricQStashDeliveries    = "hubsync_qstash_deliveries_total"
)

var (
	descQStashPublished     = prometheus.NewDesc(MetricQStashPublished, "Messages QStash accepted from the publisher (deduplicated ones included).", nil, nil)
	descQStashPublishFailed = prometheus.NewDesc(MetricQStashPublishFailed, "Publishes QStash refused or that failed; the events back off and are published again.", nil, nil)
	descQStashRepublished   = prometheus.NewDesc(MetricQStashRepublished, "Events the reconciliation sweep scheduled for a new publish (a new deduplication id).", nil, nil)
	descQStashDeliveries    = prometheus.NewDesc(MetricQStashDeliveries, "Deliveries to POST /qstash/hubspot by answer: 200 done or no-op, 503 retry later, 489 dead-lettered, 401 bad signature, 400 other refusals, 500 internal.", []string{"code"}, nil)
)

// dispatchCollector exports dispatch.Metrics at scrape time.
type dispatchCollector struct{ m *dispatch.Metrics }

// Describe implements prometheus.Collector.
func (c dispatchCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descQStashPublished, descQStashPublishFailed, descQStashRepublished, descQStashDeliveries} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c dispatchCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.m.Snapshot()
	ch <- prometheus.MustNewConstMetric(descQStashPublished, prometheus.CounterValue, float64(s.Published))
	ch <- prometheus.MustNewConstMetric(descQStashPublishFailed, prometheus.CounterValue, float64(s.PublishFailed))
	ch <- prometheus.MustNewConstMetric(descQStashRepublished, prometheus.CounterValue, float64(s.Republished))
	for _, code := range dispatch.DeliveryCodes {
		ch <- prometheus.MustNewConstMetric(descQStashDeliveries, prometheus.CounterValue, float64(s.Deliveries[code]), fmt.Sprint(code))
	}
}
