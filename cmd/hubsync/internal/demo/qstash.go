package demo

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hubsync/hubsync/dispatch"
	"github.com/hubsync/hubsync/qstash/qstashsim"
	"github.com/hubsync/hubsync/server"
)

// The dispatch modes of Config.Dispatch.
const (
	DispatchPoll   = server.DispatchPoll
	DispatchQStash = server.DispatchQStash
)

// QStash mode's settings in the demo.
const (
	// QStashChangesDefault is the default size of a qstash-mode run: every
	// outbound event is a delivery and a HubSpot call of its own (no
	// coalescing or batching across events), so the same budget moves fewer.
	QStashChangesDefault = 500
	// QStashDurationDefault bounds a qstash-mode run.
	QStashDurationDefault = 10 * time.Minute
	// qstashReconcileAfter is the age past which the demo's cron re-publishes
	// an unfinished event: longer than the emulator's retries of a message
	// under the flow control's backlog, so that it only repairs lost ones.
	qstashReconcileAfter = 3 * time.Minute
	// cronInterval is how often the demo plays the cron.
	cronInterval = 5 * time.Second
)

// QStashFaults are the emulator's delivery faults injected by default: lost
// attempts (retried by QStash with backoff), delays and duplicate deliveries.
var QStashFaults = qstashsim.Faults{Drop: 0.02, Delay: 0.05, DelayDuration: 100 * time.Millisecond, Duplicate: 0.05}

// QStashReport is what qstash mode adds to the report.
type QStashReport struct {
	// Emulator is what the QStash emulator counted.
	Emulator qstashsim.Stats
	// Deliveries counts the worker endpoint's answers by status code.
	Deliveries map[int]int64
	// Published and Republished are the publisher's counters.
	Published, PublishFailed, Republished int64
	// CronRuns and CronScheduled count the demo's cron calls and what they scheduled again.
	CronRuns, CronScheduled int64
}

// qstashRun is the QStash emulator and the settings it gives the service.
type qstashRun struct {
	sim        *qstashsim.Server
	addr       string // the service's listen address, chosen before it starts
	cronSecret string
	runs       atomic.Int64
	scheduled  atomic.Int64
}

// startQStash starts the emulator and picks the service's address (the
// worker URL QStash signs for must be known before the service starts).
func startQStash(cfg Config) (*qstashRun, error) {
	faults := QStashFaults
	if cfg.NoFaults {
		faults = qstashsim.Faults{}
	}
	sim, err := qstashsim.New(qstashsim.Config{Seed: cfg.Seed, Faults: faults})
	if err != nil {
		return nil, fmt.Errorf("demo: qstash emulator: %w", err)
	}
	if err := sim.Start("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("demo: qstash emulator: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		sim.Close()
		return nil, fmt.Errorf("demo: pick a port: %w", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		sim.Close()
		return nil, err
	}
	return &qstashRun{sim: sim, addr: addr, cronSecret: hex.EncodeToString(b)}, nil
}

// configure sets the service's qstash-mode settings.
func (q *qstashRun) configure(c *server.Config) {
	cur, next := q.sim.SigningKeys()
	c.Addr = q.addr
	c.Dispatch = server.DispatchQStash
	c.QStashURL, c.QStashToken = q.sim.URL(), q.sim.Token()
	c.QStashCurrentSigningKey, c.QStashNextSigningKey = cur, next
	c.WorkerURL = "http://" + q.addr + dispatch.WorkerPath
	// Deliveries paced below the HubSpot budget, leaving room for the
	// SyncWorker's reads; refusals remain (after an injected 429 the budget
	// pauses a whole window) and are answered 503 with Retry-After.
	c.FlowControlRate, c.FlowControlPeriod = RateLimit*8/10, 10*time.Second
	// Retries a second apart, doubling: a lost delivery comes back within
	// seconds (QStash's default waits 12 s, then 2.5 min); a refusal's
	// Retry-After still wins.
	c.QStashRetries, c.QStashRetryDelay = 6, "pow(2, retried) * 1000"
	c.CronSecret = q.cronSecret
	c.ReconcileAfter = qstashReconcileAfter
}

// cron calls GET /api/cron/reconcile every cronInterval until ctx ends, as
// a deployment's scheduler would.
func (q *qstashRun) cron(ctx context.Context, client *http.Client) {
	t := time.NewTicker(cronInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+q.addr+server.CronReconcilePath, nil)
		req.Header.Set("Authorization", "Bearer "+q.cronSecret)
		resp, err := client.Do(req)
		if err != nil {
			continue
		}
		var res struct{ Checked, Scheduled int64 }
		if resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&res) == nil {
			q.runs.Add(1)
			q.scheduled.Add(res.Scheduled)
		}
		resp.Body.Close()
	}
}

// report reads the counters for the report.
func (q *qstashRun) report(ctx context.Context, client *http.Client) *QStashReport {
	r := &QStashReport{Emulator: q.sim.Stats(), Deliveries: map[int]int64{}, CronRuns: q.runs.Load(), CronScheduled: q.scheduled.Load()}
	metrics, err := scrape(ctx, client, "http://"+q.addr+"/metrics")
	if err == nil {
		r.Published = int64(metrics[server.MetricQStashPublished])
		r.PublishFailed = int64(metrics[server.MetricQStashPublishFailed])
		r.Republished = int64(metrics[server.MetricQStashRepublished])
		for _, code := range dispatch.DeliveryCodes {
			r.Deliveries[code] = int64(metrics[fmt.Sprintf(`%s{code="%d"}`, server.MetricQStashDeliveries, code)])
		}
	}
	return r
}

// scrape reads a Prometheus text exposition into series → value.
func scrape(ctx context.Context, client *http.Client, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

// write prints the QStash part of the report.
func (r *QStashReport) write(p func(format string, a ...any)) {
	e := r.Emulator
	p("")
	p("QStash (emulator, dispatch=qstash):")
	p("  publisher: %d publishes accepted (%d deduplicated by QStash), %d failed; %d events re-published by the reconciliation cron (%d runs, %d scheduled)",
		r.Published, e.Deduplicated, r.PublishFailed, r.Republished, r.CronRuns, r.CronScheduled)
	p("  emulator: %d messages, %d delivery attempts, %d delivered, %d retried (%d after Retry-After), %d in the DLQ (%d non-retryable)",
		e.Published, e.Attempts, e.Delivered, e.Retried, e.RetryAfterHonoured, e.DLQ, e.NonRetryable)
	p("  injected faults: %d dropped, %d delayed, %d duplicated deliveries", e.Dropped, e.Delayed, e.Duplicated)
	p("  worker endpoint answers: %d × 200, %d × 503 (retry later), %d × 489 (dead letter), %d × 401, %d × 400, %d × 500",
		r.Deliveries[200], r.Deliveries[503], r.Deliveries[489], r.Deliveries[401], r.Deliveries[400], r.Deliveries[500])
	for k, n := range e.MaxParallelism {
		p("  flow control %s: at most %d deliveries at once, %d per period", k, n, e.MaxRatePerPeriod[k])
	}
}
