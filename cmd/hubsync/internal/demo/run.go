package demo

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hubsync/hubsync/dispatch"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/server"
	"github.com/hubsync/hubsync/store"
)

// Defaults of Config.
const (
	// ChangesDefault is the number of local changes of the default run.
	ChangesDefault = 1500
	// DurationDefault bounds a run; the default size converges well within it.
	DurationDefault = 3 * time.Minute
	// SeedDefault seeds the workload and the simulator's faults.
	SeedDefault int64 = 1
	// RateLimit is the simulator's ten-second limit and the service's budget.
	RateLimit = 100
)

// appID is the simulator's app id, which the service needs to spot echoes.
var appID = strconv.FormatInt(hubspotsim.AppIDDefault, 10)

// Config configures a demo run. The zero value is the default run.
type Config struct {
	// Changes is the number of local changes; default ChangesDefault.
	Changes int
	// Duration bounds the whole run: a run that has not converged by then
	// fails; default DurationDefault.
	Duration time.Duration
	// Seed seeds the workload and the simulator; default SeedDefault.
	Seed int64
	// NoFaults turns off the injected HubSpot faults.
	NoFaults bool
	// Keep keeps the temporary directory (database and service log).
	Keep bool
	// Quiet turns off the progress display.
	Quiet bool
	// Dir is where the temporary directory is made; default os.TempDir().
	Dir string
	// Out receives progress and messages; default io.Discard.
	Out io.Writer
	// Faults, when set, replaces the default injected faults (unless NoFaults).
	Faults *hubspotsim.Faults
	// NoDrift skips the drift part (made after the run on purpose).
	NoDrift bool
	// Dispatch is how outbound events reach the worker: DispatchPoll (the
	// default) or DispatchQStash, through the QStash emulator (with its
	// delivery faults unless NoFaults) and the signed worker endpoint, with
	// the reconciliation cron running. Changes and Duration then default to
	// QStashChangesDefault and QStashDurationDefault.
	Dispatch string
	// BeforeReport, when set, runs after both sides converged and before the
	// comparison; tests use it to break the sync on purpose.
	BeforeReport func(ctx context.Context, h *Harness) error
}

func (c Config) withDefaults() Config {
	c.Dispatch = cmp.Or(c.Dispatch, DispatchPoll)
	if c.Dispatch == DispatchQStash {
		c.Changes = cmp.Or(c.Changes, QStashChangesDefault)
		c.Duration = cmp.Or(c.Duration, QStashDurationDefault)
	}
	c.Changes = cmp.Or(c.Changes, ChangesDefault)
	c.Duration = cmp.Or(c.Duration, DurationDefault)
	c.Seed = cmp.Or(c.Seed, SeedDefault)
	if c.Out == nil {
		c.Out = io.Discard
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Changes < 0 {
		errs = append(errs, fmt.Errorf("Changes (-records) is %d; use a positive number (0 means %d)", c.Changes, ChangesDefault))
	}
	if c.Duration < 0 {
		errs = append(errs, fmt.Errorf("Duration (-duration) is %s; use a positive duration (0 means %s)", c.Duration, DurationDefault))
	}
	if c.Dispatch != "" && c.Dispatch != DispatchPoll && c.Dispatch != DispatchQStash {
		errs = append(errs, fmt.Errorf("Dispatch (-dispatch) is %q; use %s or %s", c.Dispatch, DispatchPoll, DispatchQStash))
	}
	return errors.Join(errs...)
}

// Faults are the faults injected by default: a few percent of 5xx, 423 and
// 429 answers, some latency, failed and duplicated webhook deliveries, and a
// rare VALIDATION_ERROR on a batch input, which dead-letters that record on
// purpose (reported as an expected dead letter, with its message).
//
// Dropped connections and hangs are left out: after an ambiguous failure, a
// retried batch create of companies or deals (which have no unique property
// to upsert by) can create a duplicate in HubSpot, as it can against the real
// HubSpot.
var Faults = hubspotsim.Faults{
	Error500: 0.02, Error502: 0.01, Error503: 0.02, Error423: 0.01, Error429: 0.006,
	Latency:          5 * time.Millisecond,
	PartialFailure:   0.005,
	WebhookFailure:   0.03,
	WebhookDuplicate: 0.03,
}

// explainedMarker is in the message of the simulator's injected VALIDATION_ERROR.
const explainedMarker = "injected partial failure"

// Harness gives BeforeReport access to the running parts.
type Harness struct {
	Sim    *hubspotsim.Server
	Server *server.Server
	// Records reads and writes the service's records directly.
	Records *records.Service
	// Dir is the temporary directory.
	Dir string
}

// Run runs the demo and returns its report. The error is non-nil only when the
// demo could not run (or ctx was cancelled); a run whose sides disagree or
// that did not converge in time returns a report whose OK is false.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	cfg = cfg.withDefaults()
	start := time.Now()
	out := cfg.Out

	dir, err := os.MkdirTemp(cfg.Dir, "hubsync-demo-")
	if err != nil {
		return nil, fmt.Errorf("demo: temporary directory: %w", err)
	}
	if !cfg.Keep {
		defer os.RemoveAll(dir)
	}
	logFile, err := os.Create(filepath.Join(dir, "hubsync.log"))
	if err != nil {
		return nil, fmt.Errorf("demo: log file: %w", err)
	}
	defer logFile.Close()
	logger := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo}))

	faults := Faults
	if cfg.Faults != nil {
		faults = *cfg.Faults
	}
	if cfg.NoFaults {
		faults = hubspotsim.Faults{}
	}
	sim, err := hubspotsim.New(hubspotsim.Config{
		TenSecondLimit: RateLimit, Seed: cfg.Seed, Faults: faults,
		WebhookRetryBase: 100 * time.Millisecond, Logger: logger.With("part", "simulator"),
	})
	if err != nil {
		return nil, fmt.Errorf("demo: simulator: %w", err)
	}
	defer sim.Close()
	if err := sim.Start("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("demo: simulator: %w", err)
	}

	m, err := mapping.Default().WithSubscriptions(1, demoSubscriptions...)
	if err != nil {
		return nil, fmt.Errorf("demo: mapping: %w", err)
	}
	// The records API the workload writes through needs a token; a random one
	// lives as long as this run.
	tokenBytes := make([]byte, 32)
	if _, err := rand.Read(tokenBytes); err != nil {
		return nil, fmt.Errorf("demo: API token: %w", err)
	}
	apiToken := hex.EncodeToString(tokenBytes)
	// The admin API (POST /admin/drift) gets a token of its own.
	if _, err := rand.Read(tokenBytes); err != nil {
		return nil, fmt.Errorf("demo: admin token: %w", err)
	}
	adminToken := hex.EncodeToString(tokenBytes)
	var qs *qstashRun
	if cfg.Dispatch == DispatchQStash {
		if qs, err = startQStash(cfg); err != nil {
			return nil, err
		}
		defer qs.sim.Close()
	}
	scfg := server.Config{
		APITokens:           []string{apiToken},
		AdminToken:          adminToken,
		Mapping:             m,
		DatabaseURL:         "sqlite:" + filepath.Join(dir, "hubsync.db"),
		Addr:                "127.0.0.1:0",
		HubSpotAPIBase:      sim.URL(),
		HubSpotAccessToken:  hubspotsim.AccessTokenDefault,
		HubSpotClientSecret: hubspotsim.ClientSecretDefault,
		HubSpotAppID:        appID,
		RateLimit:           RateLimit,
		DisableCleanup:      true, // the report reads the processed events
		Store: store.Config{Retry: store.RetryPolicy{
			// Short backoff, so that injected faults are retried within the run.
			MaxAttempts: 10, BackoffBase: 200 * time.Millisecond, BackoffMax: 3 * time.Second,
		}},
		Logger: logger.With("part", "hubsync"),
		// The drift part runs once the sync is idle, so its scans may take most
		// of the budget window; a production scan keeps the default 0.2.
		Drift: server.DriftConfig{BudgetShare: 0.8},
	}
	if qs != nil {
		qs.configure(&scfg)
	}
	srv, err := server.New(scfg)
	if err != nil {
		return nil, fmt.Errorf("demo: service: %w", err)
	}
	if err := srv.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("demo: service: %w", err)
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Stop(stopCtx)
	}()
	api := "http://" + srv.Addr()
	if err := sim.SetWebhookURL(api + "/webhooks/hubspot"); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	st := srv.Store()
	q, err := newQueries(st.DB(), st.Dialect())
	if err != nil {
		return nil, err
	}
	recs, err := records.New(st, links.New(st), records.Config{Destinations: []string{}, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("demo: records: %w", err)
	}

	w := Generate(cfg.Seed, cfg.Changes)
	expected, err := w.Expect(m)
	if err != nil {
		return nil, err
	}
	counts := w.Counts()
	fmt.Fprintf(out, "hubsync demo: HubSpot simulator at %s, hubsync on SQLite at %s\n", sim.URL(), api)
	if qs != nil {
		fmt.Fprintf(out, "dispatch: qstash, through the QStash emulator at %s (delivery faults %s) to %s%s; reconciliation cron every %s\n",
			qs.sim.URL(), onOff(!cfg.NoFaults), api, dispatch.WorkerPath, cronInterval)
	}
	fmt.Fprintf(out, "workload (seed %d): %d local changes (%d creates, %d updates, %d deletes) and %d HubSpot user edits; faults %s; rate limit %d calls/10 s\n",
		cfg.Seed, len(w.Local), counts[LocalCreate], counts[LocalUpdate], counts[LocalDelete], len(w.HubSpot), onOff(!cfg.NoFaults), RateLimit)
	fmt.Fprintln(out, "records are edited on one side only: same-field edits on both sides within the sync latency may legitimately end differently")

	d := newDriver(w, api, apiToken, sim, st, q)
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()

	var mon monitor
	prog := NewProgress(out, cfg.Quiet, func() []Line { return mon.lines(runCtx, d, q, sim) })
	prog.Start(runCtx)

	subs := &subsDriver{api: api, token: apiToken, http: d.http, seed: cfg.Seed}
	if qs != nil {
		go qs.cron(runCtx, d.http)
	}
	errc := make(chan error, 3)
	go func() { errc <- d.runLocal(runCtx) }()
	go func() { errc <- d.runHubSpot(runCtx) }()
	go func() { errc <- subs.run(runCtx) }()
	var driveErr error
	for range 3 {
		if err := <-errc; err != nil && driveErr == nil {
			driveErr = err
			cancel()
		}
	}
	converged := false
	var convergeErr error
	if driveErr == nil {
		mon.setPhase("waiting for both sides to settle")
		convergeErr = waitConverged(runCtx, sim, q)
		if convergeErr != nil {
			convergeErr = fmt.Errorf("%w (-duration %s)", convergeErr, cfg.Duration)
		}
		converged = convergeErr == nil
	}
	var firstDead []ops.DeadLetter
	var requeued int64
	if converged {
		// The operator's part: read the dead letters and why, fix the cause
		// (here: turn the injected faults off), re-queue them the way
		// `hubsync dlq retry` does, and let both sides settle again.
		if firstDead, err = listDeadLetters(runCtx, st); err != nil {
			return nil, err
		}
		if len(firstDead) > 0 {
			mon.setPhase(fmt.Sprintf("re-queueing %d dead letters with the faults cleared", len(firstDead)))
			if err := sim.SetFaults(hubspotsim.Faults{}); err != nil {
				return nil, fmt.Errorf("demo: clear faults: %w", err)
			}
			if requeued, err = requeueDeadLetters(runCtx, st, firstDead); err != nil {
				return nil, err
			}
			mon.setPhase("waiting for both sides to settle after the re-queue")
			if convergeErr = waitConverged(runCtx, sim, q); convergeErr != nil {
				convergeErr = fmt.Errorf("after re-queueing the dead letters: %w (-duration %s)", convergeErr, cfg.Duration)
			}
			converged = convergeErr == nil
		}
	}
	mon.setPhase("done")
	prog.Stop()
	d.http.CloseIdleConnections()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}

	// Read the end state with a fresh deadline: runCtx may have expired.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer rcancel()
	h := &Harness{Sim: sim, Server: srv, Records: recs, Dir: dir}
	if cfg.BeforeReport != nil && converged {
		if err := cfg.BeforeReport(rctx, h); err != nil {
			return nil, fmt.Errorf("demo: before report: %w", err)
		}
	}
	rep, err := collect(rctx, collectInput{
		m: m, w: w, expected: expected, d: d, q: q, sim: sim, st: st, recs: recs,
	})
	if err != nil {
		return nil, err
	}
	if rep.Subscriptions, err = collectSubscriptions(rctx, subs, st, sim); err != nil {
		return nil, err
	}
	if qs != nil {
		rep.QStash = qs.report(rctx, d.http)
	}
	rep.Converged = converged
	rep.FirstDeadLetters, rep.Requeued = firstDead, requeued
	if rep.syncOK() && !cfg.NoDrift {
		fmt.Fprintln(out, "making drift on purpose: webhooks dropped and paused in the simulator, a local row changed behind the API; then POST /admin/drift (faults off: a HubSpot error stops a scan)")
		if err := sim.SetFaults(hubspotsim.Faults{}); err != nil {
			return nil, fmt.Errorf("demo: clear faults before the drift part: %w", err)
		}
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		dd := &driftDemo{sim: sim, st: st, q: q, api: api, token: adminToken, http: d.http}
		rep.Drift, err = dd.run(dctx)
		dcancel()
		if err != nil {
			return nil, err
		}
	}
	rep.Elapsed = time.Since(start)
	rep.FirstDeadLetters, rep.Requeued = firstDead, requeued
	for _, dl := range firstDead {
		if dl.Direction == store.DirectionOutbound && strings.Contains(dl.ErrorMessage, explainedMarker) {
			rep.ExpectedDeadLetters++
		}
	}
	switch {
	case driveErr != nil && errors.Is(runCtx.Err(), context.DeadlineExceeded):
		rep.Problem = fmt.Sprintf("not converged before the deadline (-duration %s): the workload itself had not finished (%d of %d local changes, %d of %d HubSpot edits made)",
			cfg.Duration, d.localDone.Load(), len(w.Local), d.hubspotDone.Load(), len(w.HubSpot))
	case driveErr != nil:
		rep.Problem = "the workload failed: " + driveErr.Error()
	case convergeErr != nil:
		rep.Problem = convergeErr.Error()
	}
	if cfg.Keep {
		rep.Dir = dir
	}
	rep.LogFile = filepath.Join(dir, "hubsync.log")
	return rep, nil
}

// listDeadLetters returns the dead letters of every queue, without payloads.
func listDeadLetters(ctx context.Context, st store.Store) ([]ops.DeadLetter, error) {
	var out []ops.DeadLetter
	for _, dir := range []store.Direction{store.DirectionOutbound, store.DirectionInbound, store.DirectionInternal} {
		dls, err := ops.ListDeadLetters(ctx, st, ops.DeadLetterQuery{Direction: dir, Limit: ops.DeadLetterLimitMax})
		if err != nil {
			return nil, fmt.Errorf("demo: dead letters: %w", err)
		}
		for _, dl := range dls {
			dl.Payload = nil
			out = append(out, dl)
		}
	}
	return out, nil
}

// requeueDeadLetters re-queues dls through ops.RetryDeadLetters, the code
// path of `hubsync dlq retry` and POST /admin/deadletters/retry.
func requeueDeadLetters(ctx context.Context, st store.Store, dls []ops.DeadLetter) (int64, error) {
	ids := map[store.Direction][]string{}
	for _, dl := range dls {
		ids[dl.Direction] = append(ids[dl.Direction], dl.ID)
	}
	var n int64
	for _, dir := range []store.Direction{store.DirectionOutbound, store.DirectionInbound, store.DirectionInternal} {
		if len(ids[dir]) == 0 {
			continue
		}
		res, err := ops.RetryDeadLetters(ctx, st, ops.RetryRequest{Direction: dir, IDs: ids[dir]})
		n += res.Requeued
		if err != nil {
			return n, fmt.Errorf("demo: %w", err)
		}
	}
	return n, nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// settlePoll is how often convergence is checked.
const settlePoll = 100 * time.Millisecond

// waitConverged returns once no webhook is pending in the simulator and no
// event is pending or processing in any queue, twice in a row; or an error
// saying what was still open when ctx ended.
func waitConverged(ctx context.Context, sim *hubspotsim.Server, q *queries) error {
	quiet := 0
	var last string
	for {
		open, desc, err := openWork(ctx, sim, q)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if err == nil {
			last = desc
			if open == 0 {
				quiet++
				if quiet == 3 {
					return nil
				}
			} else {
				quiet = 0
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not converged before the deadline: %s", cmp.Or(last, "nothing measured"))
		case <-time.After(settlePoll):
		}
	}
}

// openWork counts the work still to do on both sides.
func openWork(ctx context.Context, sim *hubspotsim.Server, q *queries) (int64, string, error) {
	pending := sim.Counters().WebhooksPending
	qc, err := q.queueCounts(ctx)
	if err != nil {
		return 0, "", err
	}
	in, outb, internal := qc[store.DirectionInbound].Open(), qc[store.DirectionOutbound].Open(), qc[store.DirectionInternal].Open()
	desc := fmt.Sprintf("%d webhook events undelivered, %d inbound, %d outbound and %d internal events still open", pending, in, outb, internal)
	return pending + in + outb + internal, desc, nil
}

// monitor renders the progress lines.
type monitor struct {
	mu        sync.Mutex
	phase     string
	lastLines []Line
}

func (m *monitor) setPhase(p string) {
	m.mu.Lock()
	m.phase = p
	m.mu.Unlock()
}

func (m *monitor) lines(ctx context.Context, d *driver, q *queries, sim *hubspotsim.Server) []Line {
	m.mu.Lock()
	defer m.mu.Unlock()
	qc, err := q.queueCounts(ctx)
	if err != nil {
		return m.lastLines
	}
	c := sim.Counters()
	var limit429 int64
	for _, n := range c.RateLimited429 {
		limit429 += n
	}
	var faults int64
	for _, n := range c.FaultsInjected {
		faults += n
	}
	ob, ib := qc[store.DirectionOutbound], qc[store.DirectionInbound]
	lines := []Line{
		{Label: "local changes", Done: d.localDone.Load(), Total: int64(len(d.w.Local))},
		{Label: "HubSpot user edits", Done: d.hubspotDone.Load(), Total: int64(len(d.w.HubSpot))},
		{Label: "outbound to HubSpot", Done: ob.ByStatus[store.StatusProcessed] + ob.ByStatus[store.StatusFailed], Total: ob.Total(),
			Note: fmt.Sprintf("retries %d, dead %d", ob.Retries, ob.ByStatus[store.StatusFailed])},
		{Label: "inbound (webhooks)", Done: ib.ByStatus[store.StatusProcessed] + ib.ByStatus[store.StatusFailed], Total: ib.Total(),
			Note: fmt.Sprintf("retries %d, dead %d, undelivered %d", ib.Retries, ib.ByStatus[store.StatusFailed], c.WebhooksPending)},
		{Label: "HubSpot API", Note: fmt.Sprintf("%d calls, 429 limit %d / injected %d, %d faults injected", c.Requests, limit429, c.FaultsInjected["error429"], faults)},
	}
	if m.phase != "" {
		lines = append(lines, Line{Label: "phase", Note: m.phase})
	}
	m.lastLines = lines
	return lines
}
