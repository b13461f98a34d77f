package drift_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/drift"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

const appID = 4242

// tickingClock never returns the same millisecond twice, so that every
// simulated HubSpot edit has its own timestamp.
type tickingClock struct {
	mu   sync.Mutex
	last time.Time
}

func (c *tickingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now().Truncate(time.Millisecond)
	if !now.After(c.last) {
		now = c.last.Add(time.Millisecond)
	}
	c.last = now
	return now
}

// countingReader counts the HubSpot calls of a scan and can run a hook
// before each (to cancel a scan mid-way).
type countingReader struct {
	drift.Reader
	calls  atomic.Int64
	before func(n int64)
}

func (r *countingReader) BatchReadWithHistory(ctx context.Context, t hubspot.ObjectType, ids []string, props, hist []string) (*hubspot.BatchResult, error) {
	n := r.calls.Add(1)
	if r.before != nil {
		r.before(n)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return r.Reader.BatchReadWithHistory(ctx, t, ids, props, hist)
}

func (r *countingReader) List(ctx context.Context, t hubspot.ObjectType, props []string, after string, limit int) (*hubspot.ListPage, error) {
	r.calls.Add(1)
	return r.Reader.List(ctx, t, props, after, limit)
}

// countingBudget counts the reservations made through it.
type countingBudget struct {
	budget.Budget
	reserved atomic.Int64
}

func (b *countingBudget) Reserve(ctx context.Context, key string, tokens int) (budget.Reservation, error) {
	res, err := b.Budget.Reserve(ctx, key, tokens)
	if err == nil && res.Granted {
		b.reserved.Add(int64(tokens))
	}
	return res, err
}

// bundle is a database, the simulator (no webhooks: every HubSpot edit is
// one whose webhook never came), the records service and both workers.
type bundle struct {
	d       store.Dialect
	db      *dbtest.DB
	st      store.Store
	sim     *hubspotsim.Server
	hs      *hubspot.Client
	recs    *records.Service
	out     *outbound.Worker
	in      *inbound.Worker
	reader  *countingReader
	budget  *countingBudget
	scanner *drift.Scanner
}

func setup(t *testing.T, d store.Dialect, cfg drift.Config) *bundle {
	t.Helper()
	b := &bundle{d: d}
	b.db = dbtest.Migrated(t, d)
	st, err := hubsync.NewStore(b.db.DB, d, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b.st = st
	clock := &tickingClock{}
	b.sim = hubspotsim.NewTest(t, hubspotsim.Config{AppID: appID, Now: clock.Now})
	b.hs, err = hubspot.NewClient(hubspot.Config{BaseURL: b.sim.URL(), AccessToken: hubspotsim.AccessTokenDefault})
	if err != nil {
		t.Fatal(err)
	}
	if b.recs, err = records.New(st, nil, records.Config{Mapping: mapping.Default()}); err != nil {
		t.Fatal(err)
	}
	syncBudget, err := budget.NewMemory(budget.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if b.out, err = outbound.NewWorker(outbound.Config{Store: st.Outbound(), HubSpot: b.hs, Links: links.New(st), Budget: syncBudget}); err != nil {
		t.Fatal(err)
	}
	if b.in, err = inbound.NewWorker(inbound.WorkerConfig{Store: st.Inbound(), Applier: b.recs, HubSpot: b.hs, AppID: strconv.Itoa(appID)}); err != nil {
		t.Fatal(err)
	}
	mem, err := budget.NewMemory(budget.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b.budget = &countingBudget{Budget: mem}
	b.reader = &countingReader{Reader: b.hs}
	cfg.Store, cfg.Records, cfg.HubSpot, cfg.AppID = st, b.recs, b.reader, strconv.Itoa(appID)
	if cfg.Budget == nil {
		cfg.Budget = b.budget
	}
	if b.scanner, err = drift.New(cfg); err != nil {
		t.Fatal(err)
	}
	return b
}

// drain runs both workers until neither has anything left.
func (b *bundle) drain(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for range 50 {
		s, err := b.out.RunOnce(ctx)
		if err != nil {
			t.Fatalf("outbound: %v", err)
		}
		n, err := b.in.RunOnce(ctx)
		if err != nil {
			t.Fatalf("inbound: %v", err)
		}
		if s.Claimed == 0 && n == 0 {
			return
		}
	}
	t.Fatal("the queues did not drain in 50 cycles")
}

// contact creates a local contact and syncs it to HubSpot; it returns the
// record and its HubSpot id.
func (b *bundle) contact(t *testing.T, email, first string) (records.Record, string) {
	t.Helper()
	rec, err := b.recs.Insert(context.Background(), "contacts", map[string]any{"email": email, "first_name": first, "last_name": "Lovelace"})
	if err != nil {
		t.Fatal(err)
	}
	b.drain(t)
	id, ok, err := links.New(b.st).Lookup(context.Background(), "hubspot", "contacts", rec.ID)
	if err != nil || !ok {
		t.Fatalf("contact %s not linked after the sync: %v", email, err)
	}
	return rec, id
}

func (b *bundle) run(t *testing.T, opts drift.Options) *drift.Report {
	t.Helper()
	rep, err := b.scanner.Run(context.Background(), opts)
	if err != nil {
		t.Fatalf("drift run: %v", err)
	}
	return rep
}

func (b *bundle) field(t *testing.T, id, name string) any {
	t.Helper()
	r, err := b.recs.Get(context.Background(), "contacts", id)
	if err != nil {
		t.Fatal(err)
	}
	return r.Fields[name]
}

func (b *bundle) prop(t *testing.T, id, name string) string {
	t.Helper()
	o, ok := b.sim.Object("contacts", id)
	if !ok {
		t.Fatalf("no HubSpot contact %s", id)
	}
	return o.Properties[name]
}

// exec runs SQL written with ? placeholders on the bundle's database.
func (b *bundle) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	if _, err := b.db.DB.Exec(dialectsql.Rebind(b.d, query), args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// count returns one number a query reads.
func (b *bundle) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := b.db.DB.QueryRow(dialectsql.Rebind(b.d, query), args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// deadLetter turns a record's pending outbound events into dead letters, as
// when HubSpot refused them for good: the change never reached HubSpot.
func (b *bundle) deadLetter(t *testing.T, recordID string) {
	t.Helper()
	b.exec(t, "UPDATE _System_IntegrationOutbound SET Status = 'failed' WHERE RecordID = ? AND Status = 'pending'", recordID)
}

// queued counts the rows of both HubSpot queues.
func (b *bundle) queued(t *testing.T) int {
	return b.count(t, "SELECT COUNT(*) FROM _System_IntegrationInbound") + b.count(t, "SELECT COUNT(*) FROM _System_IntegrationOutbound")
}
