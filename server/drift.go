package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	hubsync "github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/drift"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/startstop"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// Drift metric names.
const (
	MetricDriftRuns         = "hubsync_drift_runs_total"
	MetricDriftScanned      = "hubsync_drift_records_scanned_total"
	MetricDriftDifferences  = "hubsync_drift_differences_total"
	MetricDriftRepaired     = "hubsync_drift_repaired_total"
	MetricDriftAmbiguous    = "hubsync_drift_ambiguous_total"
	MetricDriftOrphans      = "hubsync_drift_orphans_total"
	MetricDriftRemaining    = "hubsync_drift_remaining"
	MetricDriftLastComplete = "hubsync_drift_last_complete_timestamp_seconds"
)

// DriftConfig configures drift detection and repair (package drift) in the
// server: the POST /admin/drift route and the scheduled scan.
type DriftConfig struct {
	// Interval runs a scan (with repairs) every Interval; 0 turns the
	// scheduled scan off (the default).
	Interval time.Duration
	// BudgetShare is the share of the HubSpot budget window a scan may use,
	// above 0 and at most 1; default budget.ShareDefault (0.2), so the
	// sync's own calls always find room.
	BudgetShare float64
	// PageSize is the records compared per HubSpot call; default
	// drift.PageSizeDefault.
	PageSize int
	// Policy is the policy of object types without their own; default
	// drift.PolicyReport (ambiguous differences are reported, not repaired).
	Policy drift.Policy
	// Policies are per-object policies; they win over the mapping file's
	// drift_policy.
	Policies map[string]drift.Policy
	// MaxDifferences is the most differences a scan's report lists (the
	// rest are counted, in the report and in /metrics, and repaired alike);
	// default drift.MaxDifferencesDefault. POST /admin/drift may ask for
	// another limit for its scan.
	MaxDifferences int
}

func (c DriftConfig) validate() error {
	var errs []error
	if c.Interval < 0 || (c.Interval > 0 && c.Interval < time.Second) {
		errs = append(errs, fmt.Errorf("Drift.Interval is %s; use at least 1s (hours suit most portals), or 0 to turn the scheduled drift scan off", c.Interval))
	}
	if c.BudgetShare != 0 {
		if _, err := budget.ShareLimit(budget.LimitDefault, c.BudgetShare); err != nil {
			errs = append(errs, fmt.Errorf("Drift.BudgetShare: %v", err))
		}
	}
	if c.PageSize < 0 || c.PageSize > drift.PageSizeMax {
		errs = append(errs, fmt.Errorf("Drift.PageSize is %d; use 1..%d, or 0 for %d", c.PageSize, drift.PageSizeMax, drift.PageSizeDefault))
	}
	if c.MaxDifferences < 0 || c.MaxDifferences > drift.MaxDifferencesMax {
		errs = append(errs, fmt.Errorf("Drift.MaxDifferences is %d; use 1..%d (the most differences a report lists; the rest are counted), or 0 for %d", c.MaxDifferences, drift.MaxDifferencesMax, drift.MaxDifferencesDefault))
	}
	if _, err := drift.ParsePolicy(string(c.Policy)); err != nil {
		errs = append(errs, fmt.Errorf("Drift.Policy: %v", err))
	}
	return errors.Join(errs...)
}

// driftMetrics are the scans' figures in /metrics.
type driftMetrics struct {
	runs         *prometheus.CounterVec
	scanned      *prometheus.CounterVec
	differences  *prometheus.CounterVec
	repaired     *prometheus.CounterVec
	ambiguous    *prometheus.CounterVec
	orphans      *prometheus.CounterVec
	remaining    prometheus.Gauge
	lastComplete prometheus.Gauge
}

func newDriftMetrics(reg prometheus.Registerer) *driftMetrics {
	m := &driftMetrics{
		runs:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricDriftRuns, Help: "Drift scans run, by outcome (complete, partial, error) and mode (repair, dry_run)."}, []string{"outcome", "mode"}),
		scanned:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricDriftScanned, Help: "Local records compared with HubSpot by drift scans, by object type."}, []string{"object"}),
		differences:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricDriftDifferences, Help: "Differences found by drift scans, by object type, field (HubSpot property, or [missing_link], [orphan], [gone_in_hubspot]) and verdict."}, []string{"object", "field", "verdict"}),
		repaired:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricDriftRepaired, Help: "Drift repairs enqueued, by direction (to_hubspot, to_local)."}, []string{"direction"}),
		ambiguous:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricDriftAmbiguous, Help: "Ambiguous differences (both sides changed since they agreed), by object type."}, []string{"object"}),
		orphans:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricDriftOrphans, Help: "HubSpot objects that no local record is linked to, by object type."}, []string{"object"}),
		remaining:    prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricDriftRemaining, Help: "Differences the latest drift scan left unrepaired."}),
		lastComplete: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricDriftLastComplete, Help: "Unix time the latest complete drift scan finished; 0 before the first."}),
	}
	reg.MustRegister(m.runs, m.scanned, m.differences, m.repaired, m.ambiguous, m.orphans, m.remaining, m.lastComplete)
	for _, d := range []string{drift.ToHubSpot, drift.ToLocal} {
		m.repaired.WithLabelValues(d)
	}
	return m
}

func (m *driftMetrics) record(rep *drift.Report, err error, now time.Time) {
	mode := "repair"
	if rep != nil && rep.DryRun {
		mode = "dry_run"
	}
	switch {
	case err != nil:
		m.runs.WithLabelValues("error", mode).Inc()
	case rep.Complete:
		m.runs.WithLabelValues("complete", mode).Inc()
		m.lastComplete.Set(float64(now.Unix()))
	default:
		m.runs.WithLabelValues("partial", mode).Inc()
	}
	if rep == nil {
		return
	}
	for t, n := range rep.Scanned {
		m.scanned.WithLabelValues(t).Add(float64(n))
	}
	// Every difference found, not only those the report lists.
	for c, n := range rep.ByClass() {
		m.differences.WithLabelValues(c.ObjectType, c.Key, string(c.Verdict)).Add(float64(n))
		if c.Verdict == drift.Ambiguous {
			m.ambiguous.WithLabelValues(c.ObjectType).Add(float64(n))
		}
		if c.Kind == drift.KindOrphan {
			m.orphans.WithLabelValues(c.ObjectType).Add(float64(n))
		}
	}
	for dir, n := range rep.Repaired {
		m.repaired.WithLabelValues(dir).Add(float64(n))
	}
	m.remaining.Set(float64(rep.Remaining))
}

// driftRunner runs one scan at a time for the admin route and the schedule.
type driftRunner struct {
	scanner *drift.Scanner
	metrics *driftMetrics
	log     *slog.Logger
	now     func() time.Time
	mu      sync.Mutex
}

// errDriftBusy answers 409: a scan is running.
var errDriftBusy = errors.New("a drift scan is already running; try again when it ends")

func (d *driftRunner) run(ctx context.Context, opts drift.Options) (*drift.Report, error) {
	if !d.mu.TryLock() {
		return nil, errDriftBusy
	}
	defer d.mu.Unlock()
	rep, err := d.scanner.Run(ctx, opts)
	d.metrics.record(rep, err, d.now())
	return rep, err
}

// NewDriftShare returns the budget a drift scan reserves through: at most
// share of each window of cfg's limit (budget.ShareLimit), under the key
// key+":drift" of a budget of its own on db, then from shared.
func NewDriftShare(db *hubsync.DB, shared budget.Budget, cfg budget.Config, key string, share float64) (*budget.Share, error) {
	if share == 0 {
		share = budget.ShareDefault
	}
	n, err := budget.ShareLimit(max(cfg.Limit, 1), share)
	if err != nil {
		return nil, err
	}
	capCfg := cfg
	capCfg.Limit, capCfg.DailyLimit = n, -1
	capB, err := budget.NewSQL(db.SQL, db.Dialect, capCfg)
	if err != nil {
		return nil, fmt.Errorf("drift budget share: %w", err)
	}
	return &budget.Share{Shared: shared, Cap: capB, CapKey: key + ":drift"}, nil
}

// driftRequest is the body of POST /admin/drift.
type driftRequest struct {
	// DryRun reports without repairing.
	DryRun bool `json:"dry_run"`
	// Objects limits the scan to these object types.
	Objects []string `json:"objects"`
	// Policies override the configured per-object policies for this scan.
	Policies map[string]string `json:"policies"`
	// MaxDifferences overrides Drift.MaxDifferences for this scan's report.
	MaxDifferences int `json:"max_differences"`
}

// adminDrift serves POST /admin/drift: one scan, answered with its report.
func (a *adminAPI) drift(w http.ResponseWriter, r *http.Request) error {
	if a.driftRunner == nil {
		writeError(w, http.StatusConflict, "unavailable", "drift detection needs the HubSpot client: this replica runs neither worker")
		return nil
	}
	var req driftRequest
	if err := decodeOptionalBody(w, r, &req); err != nil {
		return err
	}
	opts := drift.Options{DryRun: req.DryRun, ObjectTypes: req.Objects, MaxDifferences: req.MaxDifferences}
	if req.MaxDifferences < 0 || req.MaxDifferences > drift.MaxDifferencesMax {
		return fmt.Errorf("%w: max_differences is %d; use 1..%d, or leave it out for the server's limit (a larger drift: read the totals, or scan one object type at a time with objects)", ops.ErrBadRequest, req.MaxDifferences, drift.MaxDifferencesMax)
	}
	for _, t := range req.Objects {
		if _, ok := a.mapping.Lookup(t); !ok {
			return fmt.Errorf("%w: objects: %q is not a mapped object type", ops.ErrBadRequest, t)
		}
	}
	if len(req.Policies) > 0 {
		opts.Policies = map[string]drift.Policy{}
		for t, p := range req.Policies {
			if _, ok := a.mapping.Lookup(t); !ok {
				return fmt.Errorf("%w: policies: %q is not a mapped object type", ops.ErrBadRequest, t)
			}
			pol, err := drift.ParsePolicy(p)
			if err != nil {
				return fmt.Errorf("%w: policies: %v", ops.ErrBadRequest, err)
			}
			opts.Policies[t] = pol
		}
	}
	rep, err := a.driftRunner.run(r.Context(), opts)
	if errors.Is(err, errDriftBusy) {
		writeError(w, http.StatusConflict, "busy", err.Error())
		return nil
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

// driftScheduler runs a scan every interval. Replicas may all run it: one
// scan per database runs at a time only per process, so run the schedule on
// one replica (the others keep Drift.Interval 0).
type driftScheduler struct {
	runner   *driftRunner
	interval time.Duration
	log      *slog.Logger
	svc      startstop.Service
}

func (d *driftScheduler) Start(ctx context.Context) error { return d.svc.Start(ctx, d.run) }
func (d *driftScheduler) Stop(ctx context.Context) error  { return d.svc.Stop(ctx) }

func (d *driftScheduler) run(ctx context.Context, stop <-chan struct{}) {
	periodic(ctx, stop, d.interval, false, func(ctx context.Context) {
		rep, err := d.runner.run(ctx, drift.Options{})
		switch {
		case err != nil && !errors.Is(err, context.Canceled):
			d.log.Error("drift scan failed", "err", err)
		case err == nil:
			d.log.Info("drift scan", "differences", rep.Found(), "repaired_to_hubspot", rep.Repaired[drift.ToHubSpot],
				"repaired_to_local", rep.Repaired[drift.ToLocal], "remaining", rep.Remaining)
		}
	})
}

// driftPart builds the drift scanner (with its share of the budget), its
// metrics and, with Drift.Interval, the scheduled scan.
func (s *Server) driftPart(db *hubsync.DB, st store.Store, lk *links.Links, recs *records.Service, client *hubspot.Client, bud budget.Budget) (*driftRunner, error) {
	cfg := s.cfg
	if recs == nil {
		var err error
		if recs, err = records.New(st, lk, records.Config{ObjectTypes: cfg.Mapping.ObjectTypes(), Mapping: cfg.Mapping, Logger: s.log}); err != nil {
			return nil, fmt.Errorf("records: %w", err)
		}
	}
	share, err := NewDriftShare(db, bud, budget.Config{Limit: cfg.RateLimit, DailyLimit: cfg.DailyLimit, Now: st.Now}, cfg.BudgetKey, cfg.Drift.BudgetShare)
	if err != nil {
		return nil, fmt.Errorf("Drift.BudgetShare: %w", err)
	}
	sc, err := drift.New(drift.Config{
		Store: st, Records: recs, Links: lk, HubSpot: client, Budget: share, BudgetKey: cfg.BudgetKey,
		Mapping: cfg.Mapping, AppID: cfg.HubSpotAppID, PageSize: cfg.Drift.PageSize,
		Policy: cfg.Drift.Policy, Policies: cfg.Drift.Policies, MaxDifferences: cfg.Drift.MaxDifferences, Logger: s.log,
	})
	if err != nil {
		return nil, err
	}
	r := &driftRunner{scanner: sc, metrics: newDriftMetrics(s.in.reg), log: s.log, now: st.Now}
	if cfg.Drift.Interval > 0 {
		d := &driftScheduler{runner: r, interval: cfg.Drift.Interval, log: s.log}
		s.parts = append(s.parts, part{"drift", d.Start, d.Stop})
	}
	return r, nil
}
