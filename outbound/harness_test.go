package outbound_test

import (
	"context"
	"fmt"
	"github.com/hubsync/hubsync"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/storetest"
)

// testRetry retries quickly (by the injected clock) and dead-letters only a
// record that fails many times in a row.
var testRetry = store.RetryPolicy{MaxAttempts: 25, BackoffBase: time.Second, BackoffMax: 4 * time.Second}

type options struct {
	dialect     store.Dialect
	faults      hubspotsim.Faults
	tenSecond   int // simulator's limit; default 100
	budgetLimit int // budget's limit per 10 s; default 10000 (out of the way)
	mapping     *mapping.Set
	timeout     time.Duration // client timeout; default 2 s
	token       string        // client token; default the simulator's
	// sharedEmails lets the records service give two contacts one email,
	// as two concurrent writes of one new email can (the check each makes
	// sees neither): its mapping upserts no type by email.
	sharedEmails bool
}

type bundle struct {
	clock   *storetest.Clock
	db      *dbtest.DB
	st      store.Store
	sim     *hubspotsim.Server
	client  *hubspot.Client
	links   *links.Links
	recs    *records.Service
	budget  budget.Budget
	mapping *mapping.Set
	timeout time.Duration
}

func openStore(t *testing.T, db *dbtest.DB, clock *storetest.Clock) store.Store {
	t.Helper()
	cfg := store.Config{Now: clock.Now, Retry: testRetry}
	st, err := hubsync.NewStore(db.DB, db.Dialect, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func setup(t *testing.T, o options) *bundle {
	t.Helper()
	b := &bundle{clock: storetest.NewClock(time.Time{}), mapping: o.mapping, timeout: o.timeout}
	if b.mapping == nil {
		b.mapping = mapping.Default()
	}
	if b.timeout == 0 {
		b.timeout = 2 * time.Second
	}
	b.db = dbtest.Migrated(t, cmpDialect(o.dialect))
	b.st = openStore(t, b.db, b.clock)
	b.sim = hubspotsim.NewTest(t, hubspotsim.Config{TenSecondLimit: o.tenSecond, Now: b.clock.Now, Faults: o.faults, Seed: 7})
	limit := o.budgetLimit
	if limit == 0 {
		limit = 10000
	}
	var err error
	if b.budget, err = budget.NewMemory(budget.Config{Limit: limit, Now: b.clock.Now}); err != nil {
		t.Fatal(err)
	}
	b.client = b.newClient(t, o.token)
	b.links = links.New(b.st)
	var recsMapping *mapping.Set
	if o.sharedEmails {
		if recsMapping, err = mapping.Parse([]byte("objects:\n  contacts:\n    fields: {email: email}\n")); err != nil {
			t.Fatal(err)
		}
	}
	if b.recs, err = records.New(b.st, b.links, records.Config{Mapping: recsMapping}); err != nil {
		t.Fatal(err)
	}
	return b
}

func cmpDialect(d store.Dialect) store.Dialect {
	if d == "" {
		return store.SQLite
	}
	return d
}

// budgetKey is the budget key of the harness's workers and clients.
const budgetKey = "hubspot:test"

func (b *bundle) newClient(t *testing.T, token string) *hubspot.Client {
	t.Helper()
	if token == "" {
		token = hubspotsim.AccessTokenDefault
	}
	// As in the server: every response calibrates the budget, through the hook.
	c, err := hubspot.NewClient(hubspot.Config{BaseURL: b.sim.URL(), AccessToken: token, Timeout: b.timeout,
		OnResponse: budget.ObserveHubSpot(b.budget, budgetKey, testLogger())})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (b *bundle) worker(t *testing.T, mod func(*outbound.Config)) *outbound.Worker {
	t.Helper()
	cfg := outbound.Config{
		Store: b.st.Outbound(), HubSpot: b.client, Links: b.links, Budget: b.budget, BudgetKey: budgetKey,
		Mapping: b.mapping, HTTPTimeout: b.timeout, LeaseDuration: 10 * time.Minute, Now: b.clock.Now,
		PollInterval: 20 * time.Millisecond, Logger: testLogger(),
	}
	if b.recs != nil {
		cfg.LocalRecords = b.recs // as serve sets it
	}
	if mod != nil {
		mod(&cfg)
	}
	w, err := outbound.NewWorker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// counts returns the outbound queue's events by status.
func (b *bundle) counts(t *testing.T) map[store.Status]int64 {
	t.Helper()
	s, err := b.st.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[store.Status]int64{}
	for _, r := range s.Rows {
		if r.Direction == store.DirectionOutbound && r.Key == "hubspot" {
			out[r.Status] += r.Count
		}
	}
	return out
}

// drain runs the workers' cycles until no event is pending or processing.
// When no worker finds anything claimable, it moves the injected clock on, so
// backoffs and budget windows pass without sleeping.
func (b *bundle) drain(t *testing.T, ws ...*outbound.Worker) outbound.Summary {
	t.Helper()
	ctx := context.Background()
	var total outbound.Summary
	deadline := time.Now().Add(60 * time.Second)
	for {
		progress := false
		for _, w := range ws {
			s, err := w.RunOnce(ctx)
			if err != nil {
				t.Logf("cycle: %v", err)
			}
			addSummary(&total, s)
			if s.Claimed > 0 {
				progress = true
			}
		}
		if !progress {
			c := b.counts(t)
			if c[store.StatusPending] == 0 && c[store.StatusProcessing] == 0 {
				return total
			}
			b.clock.Advance(2 * time.Second)
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue did not drain: %v", b.counts(t))
		}
	}
}

func addSummary(t *outbound.Summary, s outbound.Summary) {
	t.Claimed += s.Claimed
	t.Records += s.Records
	t.Coalesced += s.Coalesced
	t.Calls += s.Calls
	t.Completed += s.Completed
	t.Skipped += s.Skipped
	t.Retried += s.Retried
	t.Failed += s.Failed
	t.Released += s.Released
}

// workload makes random local changes through the records service and
// returns the ids of the live records by object type.
type workload struct {
	b       *bundle
	rng     *rand.Rand
	version map[string]map[string]int64 // object type → id → version
	seq     int
}

func newWorkload(b *bundle, seed uint64) *workload {
	return &workload{b: b, rng: rand.New(rand.NewPCG(seed, seed)), version: map[string]map[string]int64{}}
}

func (w *workload) insert(t *testing.T, objectType string, fields map[string]any) string {
	t.Helper()
	r, err := w.b.recs.Insert(context.Background(), objectType, fields)
	if err != nil {
		t.Fatal(err)
	}
	if w.version[objectType] == nil {
		w.version[objectType] = map[string]int64{}
	}
	w.version[objectType][r.ID] = r.Version
	return r.ID
}

func (w *workload) update(t *testing.T, objectType, id string, patch map[string]any) {
	t.Helper()
	r, err := w.b.recs.Update(context.Background(), objectType, id, w.version[objectType][id], patch)
	if err != nil {
		t.Fatal(err)
	}
	w.version[objectType][id] = r.Version
}

func (w *workload) delete(t *testing.T, objectType, id string) {
	t.Helper()
	if err := w.b.recs.Delete(context.Background(), objectType, id, w.version[objectType][id]); err != nil {
		t.Fatal(err)
	}
	delete(w.version[objectType], id)
}

func (w *workload) pick(objectType string) (string, bool) {
	ids := make([]string, 0, len(w.version[objectType]))
	for id := range w.version[objectType] {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return "", false
	}
	// Map order is random, but pick deterministically for a seed.
	slices.Sort(ids)
	return ids[w.rng.IntN(len(ids))], true
}

// step makes one random change to contacts (and companies when withCompanies).
func (w *workload) step(t *testing.T, withCompanies bool) {
	t.Helper()
	w.seq++
	types := []string{"contacts"}
	if withCompanies {
		types = append(types, "companies")
	}
	ot := types[w.rng.IntN(len(types))]
	id, ok := w.pick(ot)
	switch x := w.rng.IntN(100); {
	case !ok || x < 30:
		if ot == "contacts" {
			w.insert(t, ot, map[string]any{"email": fmt.Sprintf("user%d@example.com", w.seq), "first_name": fmt.Sprint("F", w.seq)})
		} else {
			w.insert(t, ot, map[string]any{"name": fmt.Sprint("Co", w.seq), "employees": float64(w.seq)})
		}
	case x < 85:
		var patch map[string]any
		if ot == "contacts" {
			patch = map[string]any{"first_name": fmt.Sprint("F", w.seq), "phone": fmt.Sprint(w.rng.IntN(1000))}
			switch w.rng.IntN(10) {
			case 0:
				patch["phone"] = nil
			case 1:
				patch["email"] = fmt.Sprintf("moved%d@example.com", w.seq)
			}
		} else {
			patch = map[string]any{"city": fmt.Sprint("C", w.seq), "employees": float64(w.rng.IntN(500))}
		}
		w.update(t, ot, id, patch)
	default:
		w.delete(t, ot, id)
	}
}

// verify checks that HubSpot holds exactly the live local records of
// objectType: one live object per record, linked, with equal mapped properties.
func (b *bundle) verify(t *testing.T, objectType string) {
	t.Helper()
	ctx := context.Background()
	obj, _ := b.mapping.Lookup(objectType)
	recs, err := b.recs.List(ctx, objectType, records.ListOptions{Limit: records.ListLimitMax})
	if err != nil {
		t.Fatal(err)
	}
	live := b.sim.Objects(obj.HubSpotType)
	if len(live) != len(recs) {
		t.Errorf("%s: %d live objects in HubSpot, %d local records", objectType, len(live), len(recs))
	}
	emails := map[string]int{}
	for _, o := range live {
		if e := o.Properties["email"]; e != "" {
			emails[e]++
			if emails[e] > 1 {
				t.Errorf("duplicate contact email %s in HubSpot", e)
			}
		}
	}
	for _, r := range recs {
		id, ok, err := b.links.Lookup(ctx, "hubspot", objectType, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Errorf("%s/%s: no link", objectType, r.ID)
			continue
		}
		o, ok := b.sim.Object(obj.HubSpotType, id)
		if !ok || o.Archived {
			t.Errorf("%s/%s: linked object %s missing or archived", objectType, r.ID, id)
			continue
		}
		want, err := obj.ToHubSpot(r.Fields)
		if err != nil {
			t.Fatal(err)
		}
		maps.DeleteFunc(want, func(_, v string) bool { return v == "" })
		if e, ok := want["email"]; ok {
			want["email"] = strings.ToLower(e)
		}
		got := map[string]string{}
		for _, p := range obj.HubSpotProperties() {
			if v, ok := o.Properties[p]; ok {
				got[p] = v
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s/%s: HubSpot has %v, local %v", objectType, r.ID, got, want)
		}
	}
}

// counting wraps a HubSpot and counts, per trace id (record id), how many
// write inputs named it; gate, when set, is called after each call.
type counting struct {
	outbound.HubSpot
	mu     sync.Mutex
	writes map[string]int
	// after, when set, runs after each write call; an error it returns
	// replaces the call's answer (a hang that ends with the context).
	after func(ctx context.Context) error
}

func newCounting(h outbound.HubSpot) *counting {
	return &counting{HubSpot: h, writes: map[string]int{}}
}

func (c *counting) note(ids []string) {
	c.mu.Lock()
	for _, id := range ids {
		c.writes[id]++
	}
	c.mu.Unlock()
}

func (c *counting) BatchUpsert(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpsertInput) (*hubspot.BatchResult, error) {
	ids := make([]string, len(in))
	for i, x := range in {
		ids[i] = x.ObjectWriteTraceID
	}
	c.note(ids)
	res, err := c.HubSpot.BatchUpsert(ctx, t, in)
	if c.after != nil {
		if aerr := c.after(ctx); aerr != nil {
			return nil, aerr
		}
	}
	return res, err
}

func (c *counting) BatchCreate(ctx context.Context, t hubspot.ObjectType, in []hubspot.CreateInput) (*hubspot.BatchResult, error) {
	ids := make([]string, len(in))
	for i, x := range in {
		ids[i] = x.ObjectWriteTraceID
	}
	c.note(ids)
	res, err := c.HubSpot.BatchCreate(ctx, t, in)
	if c.after != nil {
		if aerr := c.after(ctx); aerr != nil {
			return nil, aerr
		}
	}
	return res, err
}

func (c *counting) BatchUpdate(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpdateInput) (*hubspot.BatchResult, error) {
	ids := make([]string, len(in))
	for i, x := range in {
		ids[i] = x.ObjectWriteTraceID
	}
	c.note(ids)
	res, err := c.HubSpot.BatchUpdate(ctx, t, in)
	if c.after != nil {
		if aerr := c.after(ctx); aerr != nil {
			return nil, aerr
		}
	}
	return res, err
}

// testLogger discards logs unless HUBSYNC_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("HUBSYNC_TEST_LOG") != "" {
		return slog.Default()
	}
	return slog.New(slog.DiscardHandler)
}
