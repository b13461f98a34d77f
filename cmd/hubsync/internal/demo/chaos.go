package demo

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	hubsync "github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// Defaults of ChaosConfig.
const (
	ChaosReplicasDefault  = 3
	ChaosChangesDefault   = 10_000
	ChaosDurationDefault  = 30 * time.Minute
	ChaosKillMinDefault   = 2 * time.Second
	ChaosKillMaxDefault   = 5 * time.Second
	ChaosRateLimitDefault = 190
	// chaosAPIToken is handed to the replicas (HUBSYNC_API_TOKEN) and sent
	// on every records API call.
	chaosAPIToken = "chaos-api-token-0123456789"
)

// ErrChaosSQLite is returned for a SQLite database: replicas in separate
// processes need a database server.
var ErrChaosSQLite = errors.New("a database server is needed (PostgreSQL or MySQL/MariaDB): several `hubsync serve` processes share one database, which SQLite cannot serve; pass -database-url postgres://... or mysql://...")

// ChaosConfig configures a chaos run.
type ChaosConfig struct {
	// DatabaseURL is an empty PostgreSQL or MySQL database (required); the run
	// migrates it.
	DatabaseURL string
	// Binary is the hubsync executable started as the replicas (required).
	Binary string
	// Replicas is how many `hubsync serve` processes run; default ChaosReplicasDefault.
	Replicas int
	// Changes is the number of local changes; default ChaosChangesDefault.
	Changes int
	// KillMin and KillMax bound the random wait between two SIGKILLs; a
	// negative KillMin turns the kills off. Defaults ChaosKillMinDefault, ChaosKillMaxDefault.
	KillMin, KillMax time.Duration
	// MaxKills stops the kills after this many; 0 means no limit.
	MaxKills int
	// DBRestartCmd is run with sh -c DBRestarts times, spread over the workload.
	DBRestartCmd string
	DBRestarts   int
	// RateLimit is HubSpot's ten-second limit; default ChaosRateLimitDefault.
	RateLimit int
	// Faults chooses the simulator's injected faults (ParseFaults): FaultsAll
	// (the default), FaultsNone, or a comma list of FaultKinds such as
	// "5xx,423,latency,partial,webhooks".
	Faults string
	// Seed seeds the workload, the faults and the kills; default SeedDefault.
	Seed int64
	// Duration bounds the run; default ChaosDurationDefault.
	Duration time.Duration
	// Dir receives the replicas' logs; default a new temporary directory.
	Dir string
	// Out receives progress lines; default io.Discard.
	Out io.Writer
}

func (c ChaosConfig) withDefaults() ChaosConfig {
	c.Replicas = cmp.Or(c.Replicas, ChaosReplicasDefault)
	c.Changes = cmp.Or(c.Changes, ChaosChangesDefault)
	c.KillMin = cmp.Or(c.KillMin, ChaosKillMinDefault)
	c.KillMax = cmp.Or(c.KillMax, ChaosKillMaxDefault)
	c.RateLimit = cmp.Or(c.RateLimit, ChaosRateLimitDefault)
	c.Seed = cmp.Or(c.Seed, SeedDefault)
	c.Duration = cmp.Or(c.Duration, ChaosDurationDefault)
	c.Faults = cmp.Or(c.Faults, FaultsAll)
	if c.Out == nil {
		c.Out = io.Discard
	}
	return c
}

func (c ChaosConfig) validate() error {
	var errs []error
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("DatabaseURL (-database-url) is required: an empty PostgreSQL or MySQL database"))
	} else if d, err := store.DialectOf(c.DatabaseURL); err != nil {
		errs = append(errs, fmt.Errorf("DatabaseURL (-database-url): %w", err))
	} else if d == store.SQLite {
		errs = append(errs, ErrChaosSQLite)
	}
	if c.Binary == "" {
		errs = append(errs, errors.New("Binary is empty; pass the hubsync executable"))
	}
	if c.Replicas < 1 || c.Changes < 1 || c.DBRestarts < 0 {
		errs = append(errs, errors.New("Replicas (-replicas) and Changes (-changes) must be positive, DBRestarts (-db-restarts) not negative"))
	}
	if c.KillMin >= 0 && c.KillMax < c.KillMin {
		errs = append(errs, fmt.Errorf("-kill-every %s-%s: the upper bound must not be below the lower", c.KillMin, c.KillMax))
	}
	if _, _, err := ParseFaults(c.Faults); err != nil {
		errs = append(errs, fmt.Errorf("Faults: %w", err))
	}
	if c.DBRestarts > 0 && c.DBRestartCmd == "" {
		errs = append(errs, errors.New("-db-restarts needs -db-restart-cmd, the command that restarts the database"))
	}
	return errors.Join(errs...)
}

// ChaosReport is the verdict of a chaos run: the demo's consistency report
// plus what the chaos did and what it cost.
type ChaosReport struct {
	*Report
	Replicas   []ReplicaStats
	Kills      int
	DBRestarts []string // one line per restart: when and how it went
	// StuckLeases counts events still processing when the run ended.
	StuckLeases int64
	// WorkloadTime is how long the workload took; Throughput is local
	// changes per second over it.
	WorkloadTime time.Duration
	Throughput   float64
	// APIRetries counts records API calls retried after a 5xx or no answer.
	APIRetries int64
	// Faults is the injected faults' ChaosConfig.Faults, spelled canonically.
	Faults string
	// Recovery is what the kills cost the events they cut.
	Recovery Recovery
}

// ReplicaStats describes one replica slot over the run.
type ReplicaStats struct {
	Starts, Kills int
	// PeakRSS is the highest VmHWM (peak resident set) of its processes, in KiB.
	PeakRSS int64
}

// Verdict counts, from the comparison.
func (r *ChaosReport) counts() (mismatches, duplicates, lost, resurrected int) {
	for _, d := range r.Comparison.Differences {
		switch d.Problem {
		case ProblemField, ProblemExpectedField:
			mismatches++
		case ProblemDuplicateLink:
			duplicates++
		case ProblemNotInHubSpot, ProblemNotLocal, ProblemShouldExist:
			lost++
		case ProblemShouldBeGone:
			resurrected++
		}
	}
	return
}

// Failed says whether the run lost, duplicated, resurrected or looped a
// change, or did not settle; field mismatches alone are reported, not failed.
func (r *ChaosReport) Failed() bool {
	_, dup, lost, res := r.counts()
	return r.Problem != "" || !r.Converged || dup+lost+res > 0 || r.LoopsOutbound+r.EchoWrites > 0
}

// WriteChaos prints the demo report and the chaos verdict.
func (r *ChaosReport) WriteChaos(w io.Writer) {
	r.Write(w)
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	mis, dup, lost, res := r.counts()
	compared := 0
	for _, t := range r.Comparison.Types {
		compared += t.Local
	}
	dead := r.Queues[store.DirectionOutbound].ByStatus[store.StatusFailed] + r.Queues[store.DirectionInbound].ByStatus[store.StatusFailed]
	p("")
	p("== hubsync chaos: verdict ==")
	p("records compared %d, mismatches %d, duplicates %d, lost %d, resurrected %d, loops %d", compared, mis, dup, lost, res, r.LoopsOutbound+r.EchoWrites)
	p("dead letters %d (first settle %d, re-queued %d), stuck leases %d, 429s %d from the limit + %d injected",
		dead, len(r.FirstDeadLetters), r.Requeued, r.StuckLeases, r.Limit429(), r.HubSpot.FaultsInjected["error429"])
	p("throughput: %d local changes in %s = %.0f changes/s (whole run %s); records API calls retried %d",
		r.Steps[LocalCreate]+r.Steps[LocalUpdate]+r.Steps[LocalDelete], r.WorkloadTime.Round(time.Second), r.Throughput, r.Elapsed.Round(time.Second), r.APIRetries)
	p("injected faults: %s", r.Faults)
	p("kills: %d SIGKILLs", r.Kills)
	for i, s := range r.Replicas {
		p("  replica %d: %d starts, %d kills, peak RSS %.1f MiB", i, s.Starts, s.Kills, float64(s.PeakRSS)/1024)
	}
	if r.Kills > 0 {
		r.Recovery.write(w)
	}
	p("database restarts: %d", len(r.DBRestarts))
	for _, l := range r.DBRestarts {
		p("  %s", l)
	}
	if r.Failed() {
		p("CHAOS VERDICT: FAIL")
	} else if mis > 0 {
		p("CHAOS VERDICT: PASS (no loss, duplicate, resurrection or loop) with %d field mismatches", mis)
	} else {
		p("CHAOS VERDICT: PASS")
	}
}

// RunChaos runs the simulator, cfg.Replicas `hubsync serve` processes on one
// database and the demo workload through a load balancer, killing replicas
// and restarting the database, then settles and compares both sides.
func RunChaos(ctx context.Context, cfg ChaosConfig) (*ChaosReport, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	cfg = cfg.withDefaults()
	faults, faultsName, _ := ParseFaults(cfg.Faults) // validated
	start := time.Now()
	out := cfg.Out
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "hubsync-chaos-")
		if err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
		cfg.Dir = dir
	} else if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}

	db, err := hubsync.Open(ctx, cfg.DatabaseURL, store.Config{})
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	defer db.Close()
	if _, err := hubsync.Migrate(ctx, db); err != nil {
		return nil, fmt.Errorf("chaos: migrate: %w", err)
	}
	st := db.Store
	q, err := newQueries(st.DB(), st.Dialect())
	if err != nil {
		return nil, err
	}
	if qc, err := q.queueCounts(ctx); err != nil {
		return nil, err
	} else if n := qc[store.DirectionOutbound].Total() + qc[store.DirectionInbound].Total(); n > 0 {
		return nil, fmt.Errorf("chaos: the database already holds %d queue events; use an empty database (the verdict compares everything in it)", n)
	}
	recs, err := records.New(st, links.New(st), records.Config{Destinations: []string{}})
	if err != nil {
		return nil, fmt.Errorf("chaos: records: %w", err)
	}

	sim, err := hubspotsim.New(hubspotsim.Config{
		TenSecondLimit: cfg.RateLimit, Seed: cfg.Seed, Faults: faults,
		WebhookRetryBase: 200 * time.Millisecond, WebhookMaxAttempts: 30,
	})
	if err != nil {
		return nil, fmt.Errorf("chaos: simulator: %w", err)
	}
	defer sim.Close()
	if err := sim.Start("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("chaos: simulator: %w", err)
	}

	lb := newBalancer(cfg.Replicas)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: balancer: %w", err)
	}
	lbSrv := &http.Server{Handler: lb, ReadHeaderTimeout: 10 * time.Second}
	go lbSrv.Serve(ln)
	defer lbSrv.Close()
	lbURL := "http://" + ln.Addr().String()
	if err := sim.SetWebhookURL(lbURL + "/webhooks/hubspot"); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}

	env := append(os.Environ(),
		"HUBSYNC_DATABASE_URL="+cfg.DatabaseURL,
		"HUBSYNC_ADDR=127.0.0.1:0",
		"HUBSYNC_PUBLIC_URL="+lbURL,
		"HUBSPOT_API_BASE="+sim.URL(),
		"HUBSPOT_ACCESS_TOKEN="+hubspotsim.AccessTokenDefault,
		"HUBSPOT_CLIENT_SECRET="+hubspotsim.ClientSecretDefault,
		"HUBSPOT_APP_ID="+appID,
		"HUBSYNC_HUBSPOT_RATE_LIMIT="+strconv.Itoa(cfg.RateLimit),
		"HUBSYNC_API_TOKEN="+chaosAPIToken,
		"HUBSYNC_LOG_LEVEL=info",
	)
	reps := make([]*chaosReplica, cfg.Replicas)
	for i := range reps {
		reps[i] = &chaosReplica{n: i, bin: cfg.Binary, env: env, log: filepath.Join(cfg.Dir, fmt.Sprintf("replica%d.log", i)), lb: lb}
		if err := reps[i].start(ctx); err != nil {
			return nil, err
		}
	}
	defer func() {
		for _, r := range reps {
			r.kill()
		}
	}()
	fmt.Fprintf(out, "hubsync chaos: simulator %s (injected faults: %s), %d replicas behind %s on %s, logs in %s\n", sim.URL(), faultsName, cfg.Replicas, lbURL, st.Dialect(), cfg.Dir)

	m := mapping.Default()
	w := Generate(cfg.Seed, cfg.Changes)
	expected, err := w.Expect(m)
	if err != nil {
		return nil, err
	}
	d := newDriver(w, lbURL, chaosAPIToken, sim, st, q)
	d.retryUnavailable = true
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()

	// Chaos: kills, database restarts, RSS sampling and progress, until the
	// workload is done.
	chaosCtx, stopChaos := context.WithCancel(runCtx)
	var chaosWG sync.WaitGroup
	var kills atomic.Int64
	recovery := newRecoveryTracker(q)
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6b696c6c))
	if cfg.KillMin >= 0 && cfg.Replicas > 0 {
		chaosWG.Go(func() {
			for {
				wait := cfg.KillMin + time.Duration(rng.Int64N(int64(cfg.KillMax-cfg.KillMin)+1))
				select {
				case <-chaosCtx.Done():
					return
				case <-time.After(wait):
				}
				if cfg.MaxKills > 0 && kills.Load() >= int64(cfg.MaxKills) {
					return
				}
				r := reps[rng.IntN(len(reps))]
				if pid := r.kill(); pid > 0 {
					recovery.killed(chaosCtx, pid, time.Now())
				}
				kills.Add(1)
				// Restart every slot that is down (a start fails while the
				// database restarts).
				for _, r := range reps {
					if !r.running() {
						if err := r.start(chaosCtx); err != nil && chaosCtx.Err() == nil {
							fmt.Fprintf(out, "chaos: restart replica %d: %v (tried again after the next kill)\n", r.n, err)
						}
					}
				}
			}
		})
	}
	var restarts []string
	var restartsMu sync.Mutex
	if cfg.DBRestarts > 0 {
		chaosWG.Go(func() {
			for i := 1; i <= cfg.DBRestarts; i++ {
				at := int64(len(w.Local)) * int64(i) / int64(cfg.DBRestarts+1)
				for d.localDone.Load() < at {
					select {
					case <-chaosCtx.Done():
						return
					case <-time.After(100 * time.Millisecond):
					}
				}
				t0 := time.Now()
				// The output goes to a file, not a pipe: a restarted database
				// server inherits it and would hold a pipe open for ever.
				logf, err := os.OpenFile(filepath.Join(cfg.Dir, "db-restart.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				if err == nil {
					c := exec.CommandContext(chaosCtx, "sh", "-c", cfg.DBRestartCmd)
					c.Stdout, c.Stderr = logf, logf
					err = c.Run()
					logf.Close()
				}
				line := fmt.Sprintf("restart %d at local change %d: %s, %s", i, at, time.Since(t0).Round(10*time.Millisecond), okOr(err))
				restartsMu.Lock()
				restarts = append(restarts, line)
				restartsMu.Unlock()
				fmt.Fprintln(out, "chaos: database "+line)
			}
		})
	}
	chaosWG.Go(func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-chaosCtx.Done():
				return
			case <-tick.C:
			}
			for _, r := range reps {
				r.sampleRSS()
			}
			if time.Since(last) >= 10*time.Second {
				last = time.Now()
				fmt.Fprintf(out, "chaos: %s: %d/%d local changes, %d/%d HubSpot edits, %d kills\n", time.Since(start).Round(time.Second),
					d.localDone.Load(), len(w.Local), d.hubspotDone.Load(), len(w.HubSpot), kills.Load())
			}
		}
	})

	workStart := time.Now()
	errc := make(chan error, 2)
	go func() { errc <- d.runLocal(runCtx) }()
	go func() { errc <- d.runHubSpot(runCtx) }()
	var driveErr error
	for range 2 {
		if err := <-errc; err != nil && driveErr == nil {
			driveErr = err
		}
	}
	workTime := time.Since(workStart)
	stopChaos()
	chaosWG.Wait()
	// Every replica up for the settle.
	for _, r := range reps {
		for attempt := 0; !r.running(); attempt++ {
			err := r.start(runCtx)
			if err == nil {
				break
			}
			if attempt == 30 || runCtx.Err() != nil {
				return nil, err
			}
			select {
			case <-runCtx.Done():
			case <-time.After(time.Second):
			}
		}
	}
	fmt.Fprintf(out, "chaos: workload done in %s (%v); settling\n", workTime.Round(time.Second), okOr(driveErr))

	converged := false
	var convergeErr error
	var firstDead []ops.DeadLetter
	var requeued int64
	if driveErr == nil {
		convergeErr = settle(runCtx, sim, q)
		converged = convergeErr == nil
		if converged {
			dls, err := listDeadLetters(runCtx, st)
			if err != nil {
				return nil, err
			}
			firstDead = dls
			if len(dls) > 0 {
				if err := sim.SetFaults(hubspotsim.Faults{}); err != nil {
					return nil, err
				}
				if requeued, err = requeueDeadLetters(runCtx, st, dls); err != nil {
					return nil, err
				}
				convergeErr = settle(runCtx, sim, q)
				converged = convergeErr == nil
			}
		}
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer rcancel()
	var rep *Report
	for attempt := 0; ; attempt++ {
		if rep, err = collect(rctx, collectInput{m: m, w: w, expected: expected, d: d, q: q, sim: sim, st: st, recs: recs}); err == nil {
			break
		}
		if attempt == 10 || rctx.Err() != nil {
			return nil, err
		}
		time.Sleep(2 * time.Second) // the database may be restarting
	}
	rep.Elapsed = time.Since(start)
	rep.Converged = converged
	rep.Subscriptions.Skipped = "hubsync chaos drives records only; hubsync demo checks them"
	rep.FirstDeadLetters, rep.Requeued = firstDead, requeued
	for _, dl := range firstDead {
		if dl.Direction == store.DirectionOutbound && strings.Contains(dl.ErrorMessage, explainedMarker) {
			rep.ExpectedDeadLetters++
		}
	}
	switch {
	case driveErr != nil:
		rep.Problem = "the workload failed: " + driveErr.Error()
	case convergeErr != nil:
		rep.Problem = convergeErr.Error()
	}
	rep.LogFile = cfg.Dir
	cr := &ChaosReport{Report: rep, Kills: int(kills.Load()), DBRestarts: restarts, WorkloadTime: workTime, APIRetries: d.retries.Load(), Faults: faultsName}
	if cr.Recovery, err = recovery.result(rctx); err != nil {
		return nil, err
	}
	cr.Throughput = float64(d.localDone.Load()) / max(workTime.Seconds(), 0.001)
	cr.StuckLeases = rep.Queues[store.DirectionOutbound].ByStatus[store.StatusProcessing] + rep.Queues[store.DirectionInbound].ByStatus[store.StatusProcessing]
	for _, r := range reps {
		r.sampleRSS()
		r.mu.Lock()
		cr.Replicas = append(cr.Replicas, ReplicaStats{Starts: r.starts, Kills: r.kills, PeakRSS: r.peakRSS})
		r.mu.Unlock()
	}
	return cr, nil
}

// chaosReplica is one replica slot: the `hubsync serve` process currently in it.
type chaosReplica struct {
	n   int
	bin string
	env []string
	log string
	lb  *balancer

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	starts  int
	kills   int
	peakRSS int64 // KiB
}

// start starts a process in the slot and waits until it serves.
func (r *chaosReplica) start(ctx context.Context) error {
	logf, err := os.OpenFile(r.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("chaos: replica %d log: %w", r.n, err)
	}
	cmd := exec.Command(r.bin, "serve", "-cleanup=false")
	cmd.Env = r.env
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("chaos: start replica %d: %w", r.n, err)
	}
	exited := make(chan struct{})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "hubsync serving on "); ok {
				select {
				case addr <- a:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	r.mu.Lock()
	r.cmd, r.exited = cmd, exited
	r.starts++
	r.mu.Unlock()
	select {
	case a := <-addr:
		r.lb.set(r.n, a) // "http://host:port"
		return nil
	case <-exited:
		return fmt.Errorf("chaos: replica %d exited at start; see %s", r.n, r.log)
	case <-time.After(time.Minute):
		r.kill()
		return fmt.Errorf("chaos: replica %d did not serve within a minute; see %s", r.n, r.log)
	case <-ctx.Done():
		r.kill()
		return ctx.Err()
	}
}

func (r *chaosReplica) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.exited == nil {
		return false
	}
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// kill takes the replica out of the balancer, waits for its records API
// calls to finish (so the workload knows each local change's outcome; its
// workers and webhooks are cut mid-flight), and SIGKILLs it. It returns the
// killed process's pid, or 0 when no process was running.
func (r *chaosReplica) kill() int {
	r.lb.drain(r.n)
	r.sampleRSS()
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return 0
	}
	select {
	case <-exited:
		return 0
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	r.mu.Lock()
	r.kills++
	r.mu.Unlock()
	return cmd.Process.Pid
}

// sampleRSS reads the process's VmHWM (peak resident set) from /proc.
func (r *chaosReplica) sampleRSS() {
	r.mu.Lock()
	cmd := r.cmd
	r.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				r.mu.Lock()
				r.peakRSS = max(r.peakRSS, kb)
				r.mu.Unlock()
			}
		}
	}
}

// balancer spreads webhook deliveries and records API calls over the live
// replicas, as a load balancer in front of them would. A replica being
// killed is drained of API calls first; a webhook delivery cut by a kill is
// sent again to another replica (the simulator's own injected webhook
// failures still exercise HubSpot's retries).
type balancer struct {
	mu       sync.Mutex
	cond     *sync.Cond
	backends []string // "" while a replica is down
	inflight []int    // records API calls in flight per replica
	next     int
	client   *http.Client
}

func newBalancer(n int) *balancer {
	b := &balancer{backends: make([]string, n), inflight: make([]int, n),
		client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *balancer) set(i int, url string) {
	b.mu.Lock()
	b.backends[i] = url
	b.mu.Unlock()
}

// drain takes replica i out and waits for its API calls in flight.
func (b *balancer) drain(i int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backends[i] = ""
	for b.inflight[i] > 0 {
		b.cond.Wait()
	}
}

// pick returns a live replica, counting an API call in flight on it.
func (b *balancer) pick(api bool) (int, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for range len(b.backends) {
		i := b.next % len(b.backends)
		b.next++
		if b.backends[i] != "" {
			if api {
				b.inflight[i]++
			}
			return i, b.backends[i]
		}
	}
	return -1, ""
}

func (b *balancer) done(i int) {
	b.mu.Lock()
	b.inflight[i]--
	b.cond.Broadcast()
	b.mu.Unlock()
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	api := strings.HasPrefix(r.URL.Path, "/api/")
	for attempt := 0; attempt < 100; attempt++ {
		i, base := b.pick(api)
		if i < 0 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.RequestURI(), strings.NewReader(string(body)))
		if err != nil {
			if api {
				b.done(i)
			}
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		req.Header = r.Header.Clone()
		if api {
			req.Header.Set("Authorization", "Bearer "+chaosAPIToken)
		}
		resp, err := b.client.Do(req)
		if err != nil {
			if api {
				b.done(i)
			}
			var op *net.OpError
			if errors.As(err, &op) && op.Op == "dial" {
				continue // never reached the replica: try another
			}
			if !api && r.Context().Err() == nil {
				// A webhook delivery cut by a kill: deliveries are idempotent
				// (IdempotencyKey), so the balancer retries at once rather than
				// leave it to HubSpot's growing retry delays.
				continue
			}
			http.Error(w, "chaos balancer: "+err.Error(), http.StatusBadGateway)
			return
		}
		for k, vs := range resp.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		resp.Body.Close()
		if api {
			b.done(i)
		}
		return
	}
	http.Error(w, "chaos balancer: no replica up", http.StatusServiceUnavailable)
}

func okOr(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// settle is waitConverged, asked again while the database cannot answer
// (a restart): only ctx's end is final.
func settle(ctx context.Context, sim *hubspotsim.Server, q *queries) error {
	for {
		err := waitConverged(ctx, sim, q)
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}
