package modeltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/mysqlstore"
	"github.com/hubsync/hubsync/store/pgstore"
	"github.com/hubsync/hubsync/store/sqlitestore"
)

const (
	appID        = 4711
	clientSecret = "model-secret"
	publicURL    = "http://hubsync.model"
	// leaseDuration is every worker's lease; a tick past it expires them all.
	leaseDuration = 30 * time.Second
	// maxSkew bounds a replica's clock offset from HubSpot's.
	maxSkew = 200 * time.Millisecond
	// hubspotGap separates a HubSpot user's action from everything else, so
	// that no clock skew reorders a HubSpot edit against a local one (the
	// documented assumption: skew below the time between conflicting edits).
	hubspotGap = time.Second
)

// clock is the world's controllable time; HubSpot (the simulator) reads it
// directly, each replica with its own fixed skew.
type clock struct {
	mu   sync.Mutex
	now  time.Time
	last time.Time // the simulator's last reading: its readings never repeat
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// simNow is HubSpot's clock: the world time, but never the same millisecond
// twice, as every HubSpot edit has its own occurredAt.
func (c *clock) simNow() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now.Truncate(time.Millisecond)
	if !t.After(c.last) {
		t = c.last.Add(time.Millisecond)
	}
	c.last = t
	return t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// replica is one hubsync process: its own store (clock), records service,
// receiver and workers over the shared database.
type replica struct {
	n    int
	skew time.Duration
	st   store.Store
	recs *records.Service
	rc   *inbound.Receiver
	in   *inbound.Worker
	out  *outbound.Worker
	gate *gate // the HubSpot transport of the current workers
	gen  int   // how many times the workers were replaced (crashes)
}

// gate is a replica's HubSpot transport: it lets requests through until it is
// armed to crash after a number of requests; from then on every request blocks
// until the world ends, as in a process that stopped mid-cycle.
type gate struct {
	mu      sync.Mutex
	left    int // requests still allowed once armed
	armed   bool
	after   bool          // the blocking request reaches HubSpot first: its answer is lost
	blocked chan struct{} // closed when a request blocks
	release chan struct{} // closed at the end of the world
	next    http.RoundTripper
}

func (g *gate) RoundTrip(r *http.Request) (*http.Response, error) {
	g.mu.Lock()
	block, after := false, g.after
	if g.armed {
		if g.left == 0 {
			block = true
		} else {
			g.left--
		}
	}
	g.mu.Unlock()
	if block && after {
		if resp, err := g.next.RoundTrip(r); err == nil {
			resp.Body.Close()
		}
	}
	if block {
		select {
		case <-g.blocked:
		default:
			close(g.blocked)
		}
		<-g.release
		return nil, errors.New("modeltest: process is dead")
	}
	return g.next.RoundTrip(r)
}

// world is one seed's system.
type world struct {
	t      testing.TB
	ctx    context.Context
	clk    *clock
	sim    *hubspotsim.Server
	db     *dbtest.DB
	lk     *links.Links
	m      *mapping.Set
	bud    budget.Budget
	reps   []*replica
	log    *slog.Logger
	hooks  *httptest.Server
	mu     sync.Mutex
	pool   []hubspot.WebhookEvent // captured, not yet delivered
	retry  []hubspot.WebhookEvent // dropped deliveries HubSpot will retry
	seq    int
	zombie []chan struct{} // done channels of crashed cycles
	dead   chan struct{}   // closed at the end: releases crashed cycles

	// What the model knows happened, for the resurrection check.
	deletedLocal map[string]string // local record id -> type, deleted locally
	deletedHS    map[string]string // HubSpot id -> type, deleted in HubSpot
	mergedHS     map[string]bool   // HubSpot ids merged away
	// mergedLost holds the HubSpot ids into which an object whose create
	// was unrecorded (its answer lost) was merged (gapUnrecordedSiblings).
	mergedLost map[string]bool
	created    int
	gaps       map[int]bool // issue 11 items whose scenario is avoided
}

// objectTypes are the types the model exercises.
var objectTypes = []string{"contacts", "companies"}

// editable are the mapped fields the model edits, by type: local name and
// HubSpot property. Contacts' email is their id property and is never edited.
var editable = map[string][][2]string{
	"contacts":  {{"first_name", "firstname"}, {"last_name", "lastname"}, {"phone", "phone"}, {"company", "company"}},
	"companies": {{"name", "name"}, {"city", "city"}, {"industry", "industry"}},
}

func newWorld(ctx context.Context, t testing.TB, dialect store.Dialect, replicas int, skews []time.Duration, log *slog.Logger) *world {
	w := &world{
		t: t, ctx: ctx, m: mapping.Default(), log: log,
		clk:          &clock{now: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)},
		dead:         make(chan struct{}),
		deletedLocal: map[string]string{}, deletedHS: map[string]string{}, mergedHS: map[string]bool{}, mergedLost: map[string]bool{},
	}
	w.db = dbtest.Migrated(t, dialect)
	w.hooks = httptest.NewServer(http.HandlerFunc(w.capture))
	t.Cleanup(w.hooks.Close)
	w.sim = hubspotsim.NewTest(t, hubspotsim.Config{
		AppID: appID, ClientSecret: clientSecret, WebhookURL: w.hooks.URL,
		TenSecondLimit: 1_000_000, DailyLimit: 100_000_000, SearchPerSecond: 1_000_000,
		WebhookConcurrency: 1, Now: w.clk.simNow, Seed: 1,
	})
	var err error
	if w.bud, err = budget.NewMemory(budget.Config{Limit: 1_000_000, DailyLimit: -1, Now: w.clk.Now}); err != nil {
		t.Fatal(err)
	}
	for i := range replicas {
		r := &replica{n: i, skew: skews[i]}
		skew := r.skew
		now := func() time.Time { return w.clk.Now().Add(skew) }
		cfg := store.Config{Now: now, Retry: store.RetryPolicy{MaxAttempts: 1000, BackoffBase: time.Second, BackoffMax: 10 * time.Second}}
		switch dialect {
		case store.Postgres:
			r.st, err = pgstore.New(w.db.DB, cfg)
		case store.MySQL:
			r.st, err = mysqlstore.New(w.db.DB, cfg)
		default:
			r.st, err = sqlitestore.New(w.db.DB, cfg)
		}
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			w.lk = links.New(r.st)
		}
		if r.recs, err = records.New(r.st, links.New(r.st), records.Config{Logger: w.log}); err != nil {
			t.Fatal(err)
		}
		if r.rc, err = inbound.NewReceiver(inbound.ReceiverConfig{
			Store: r.st.Inbound(), ClientSecret: clientSecret, PublicURL: publicURL,
			AppID: strconv.Itoa(appID), Now: now, Logger: w.log,
		}); err != nil {
			t.Fatal(err)
		}
		w.reps = append(w.reps, r)
		w.newWorkers(r)
	}
	t.Cleanup(w.end)
	return w
}

// newWorkers gives r fresh workers (a restarted process: new owner, nothing
// in memory).
func (w *world) newWorkers(r *replica) {
	r.gen++
	r.gate = &gate{blocked: make(chan struct{}), release: w.dead, next: http.DefaultTransport}
	now := r.st.Now
	client, err := hubspot.NewClient(hubspot.Config{
		BaseURL: w.sim.URL(), AccessToken: hubspotsim.AccessTokenDefault,
		HTTPClient: &http.Client{Transport: r.gate},
	})
	if err != nil {
		w.t.Fatal(err)
	}
	owner := fmt.Sprintf("replica%d/gen%d", r.n, r.gen)
	if r.in, err = inbound.NewWorker(inbound.WorkerConfig{
		Store: r.st.Inbound(), Applier: r.recs, HubSpot: client, Budget: w.bud,
		AppID: strconv.Itoa(appID), LeaseDuration: leaseDuration, Owner: owner + "/inbound",
		Now: now, Logger: w.log,
	}); err != nil {
		w.t.Fatal(err)
	}
	if r.out, err = outbound.NewWorker(outbound.Config{
		Store: r.st.Outbound(), HubSpot: client, Links: links.New(r.st), Budget: w.bud,
		Concurrency: 1, LeaseDuration: leaseDuration, HTTPTimeout: 5 * time.Second,
		Owner: owner + "/outbound", Now: now, Logger: w.log, LocalRecords: r.recs,
	}); err != nil {
		w.t.Fatal(err)
	}
}

// end releases the crashed cycles and waits for them, before the database closes.
func (w *world) end() {
	close(w.dead)
	for i, done := range w.zombie {
		testwait.Recv(w.t, fmt.Sprintf("crashed cycle %d to end once released", i), done)
	}
}

// capture receives the simulator's webhook deliveries: the model, not the
// network, decides when, how often and in which order they reach a replica.
func (w *world) capture(rw http.ResponseWriter, r *http.Request) {
	var batch []hubspot.WebhookEvent
	b, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(b, &batch)
	}
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	w.pool = append(w.pool, batch...)
	w.mu.Unlock()
	rw.WriteHeader(http.StatusNoContent)
}

// settleSim waits until the simulator has handed every webhook to capture,
// and sorts the pool by event id, so the pool never depends on timing.
func (w *world) settleSim() {
	if err := w.sim.WaitWebhooksIdle(w.ctx); err != nil {
		w.t.Fatal(err)
	}
	w.mu.Lock()
	slices.SortStableFunc(w.pool, func(a, b hubspot.WebhookEvent) int { return cmpInt(a.EventID, b.EventID) })
	w.mu.Unlock()
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// deliver posts evs as one signed delivery to replica r's receiver and
// returns the status.
func (w *world) deliver(r *replica, evs []hubspot.WebhookEvent) int {
	body, err := json.Marshal(evs)
	if err != nil {
		w.t.Fatal(err)
	}
	url := publicURL + inbound.WebhookPath
	ts := r.st.Now().UnixMilli()
	req := httptest.NewRequestWithContext(w.ctx, http.MethodPost, url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(hubspot.HeaderSignatureV3, hubspot.SignV3(clientSecret, http.MethodPost, url, body, ts))
	req.Header.Set(hubspot.HeaderRequestTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(hubspot.HeaderSignatureVersion, "v3")
	rec := httptest.NewRecorder()
	r.rc.ServeHTTP(rec, req)
	return rec.Code
}

// crashRun runs one cycle of r's inbound or outbound worker that dies at
// its HubSpot request number k, before sending it or (after) once HubSpot
// has handled it: the cycle stays blocked (its leases held) until the world
// ends, and r gets fresh workers. A cycle that needs fewer requests completes
// normally.
func (w *world) crashRun(r *replica, outboundWorker bool, k int, after bool) bool {
	g := r.gate
	g.mu.Lock()
	g.armed, g.left, g.after = true, k, after
	g.mu.Unlock()
	done := make(chan struct{})
	in, out := r.in, r.out
	go func() {
		defer close(done)
		if outboundWorker {
			_, _ = out.RunOnce(w.ctx)
		} else {
			_, _ = in.RunOnce(w.ctx)
		}
	}()
	select {
	case <-done:
		g.mu.Lock()
		g.armed = false
		g.mu.Unlock()
		return false
	case <-g.blocked:
		w.zombie = append(w.zombie, done)
		w.newWorkers(r)
		return true
	case <-time.After(testwait.Deadline):
		w.t.Fatalf("timed out after %s waiting for the crashing cycle to finish or reach HubSpot request %d", testwait.Deadline, k)
		return false
	}
}

// open counts the events still to do: webhooks not yet delivered and inbound
// and outbound events pending or processing.
func (w *world) open() (int, string) {
	w.settleSim()
	w.mu.Lock()
	webhooks := len(w.pool) + len(w.retry)
	w.mu.Unlock()
	st, err := w.reps[0].st.Stats(w.ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	n := webhooks
	desc := []string{fmt.Sprintf("%d webhooks undelivered", webhooks)}
	for _, row := range st.Rows {
		if row.Direction == store.DirectionInternal {
			continue // no relay runs in the model
		}
		if row.Status == store.StatusPending || row.Status == store.StatusProcessing {
			n += int(row.Count)
			desc = append(desc, fmt.Sprintf("%d %s %s", row.Count, row.Direction, row.Status))
		}
	}
	return n, strings.Join(desc, ", ")
}

// quiesce lets HubSpot redeliver everything and runs every replica's
// workers, with the clock moving past every backoff and lease, until nothing
// is left to do.
func (w *world) quiesce() error {
	var desc string
	for range 60 {
		var n int
		if n, desc = w.open(); n == 0 {
			return nil
		}
		w.mu.Lock()
		all := append(w.retry, w.pool...)
		w.retry, w.pool = nil, nil
		w.mu.Unlock()
		slices.SortStableFunc(all, func(a, b hubspot.WebhookEvent) int { return cmpInt(a.EventID, b.EventID) })
		for len(all) > 0 {
			k := min(len(all), 100)
			if code := w.deliver(w.reps[0], all[:k]); code/100 != 2 {
				return fmt.Errorf("quiesce: receiver answered %d to a redelivery", code)
			}
			all = all[k:]
		}
		w.clk.advance(leaseDuration + time.Minute)
		for _, r := range w.reps {
			for range 20 {
				n, _ := r.in.RunOnce(w.ctx)
				if n == 0 {
					break
				}
			}
			for range 20 {
				s, _ := r.out.RunOnce(w.ctx)
				if s.Claimed == 0 {
					break
				}
			}
		}
	}
	return fmt.Errorf("not quiescent after 60 rounds: %s", desc)
}

// debugLog is the workers' and records' logger: discarded, or with
// HUBSYNC_MODEL_LOG set, every line at debug level on stderr (a run's
// story, for a failing seed): of every run with HUBSYNC_MODEL_LOG=1, of the
// replay of the shortest failing trace only with HUBSYNC_MODEL_LOG=short.
func debugLog(replay bool) *slog.Logger {
	if v := os.Getenv("HUBSYNC_MODEL_LOG"); v != "" && (v != "short" || replay) {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}
