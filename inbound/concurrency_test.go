package inbound

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// gateApplier wraps a memApplier and watches the calls in flight. With wait
// set, it holds every call until calls for wait different records are in
// flight at once, which only concurrent applies reach; the wait is bounded by
// testwait.Deadline, as a failure guard only.
type gateApplier struct {
	t     *testing.T
	inner apply.Applier
	wait  int

	open     chan struct{} // closed once wait records were in flight, or the guard fired
	openOnce sync.Once

	mu         sync.Mutex
	calls      int            // calls in flight
	records    map[string]int // calls in flight by record
	merging    int            // merges in flight
	maxCalls   int
	maxRecords int
	maxPerRec  int
	besideMrg  bool                      // a call ran beside a merge
	seen       map[string][]apply.Change // by record, in call order
	seq        []apply.Change            // every call, in call order
}

func newGate(t *testing.T, inner apply.Applier, wait int) *gateApplier {
	return &gateApplier{t: t, inner: inner, wait: wait, open: make(chan struct{}),
		records: map[string]int{}, seen: map[string][]apply.Change{}}
}

func (g *gateApplier) Apply(ctx context.Context, ch apply.Change) (apply.Result, error) {
	g.enter(ch)
	defer g.exit(ch)
	return g.inner.Apply(ctx, ch)
}

// fencedGate is a gateApplier over a FencedApplier (records.Service).
type fencedGate struct{ *gateApplier }

func (g fencedGate) ApplyFenced(ctx context.Context, ch apply.Change, fence apply.Fence) (apply.Result, error) {
	g.enter(ch)
	defer g.exit(ch)
	return g.inner.(apply.FencedApplier).ApplyFenced(ctx, ch, fence)
}

func (g *gateApplier) enter(ch apply.Change) {
	rec := ch.ObjectType + "/" + ch.ExternalID
	g.mu.Lock()
	g.calls++
	g.records[rec]++
	if g.merging > 0 || (ch.Kind == store.EventMerge && g.calls > 1) {
		g.besideMrg = true
	}
	if ch.Kind == store.EventMerge {
		g.merging++
	}
	g.maxCalls = max(g.maxCalls, g.calls)
	g.maxRecords = max(g.maxRecords, len(g.records))
	g.maxPerRec = max(g.maxPerRec, g.records[rec])
	g.seen[rec] = append(g.seen[rec], ch)
	g.seq = append(g.seq, ch)
	if g.wait > 0 && len(g.records) >= g.wait {
		g.openOnce.Do(func() { close(g.open) })
	}
	g.mu.Unlock()

	if g.wait > 0 {
		timer := time.NewTimer(testwait.Deadline)
		select {
		case <-g.open:
		case <-timer.C:
			g.t.Errorf("calls for %d different records were never in flight at once (most: %d); the applies ran one at a time", g.wait, g.stats().maxRecords)
			g.openOnce.Do(func() { close(g.open) })
		}
		timer.Stop()
	}
}

func (g *gateApplier) exit(ch apply.Change) {
	rec := ch.ObjectType + "/" + ch.ExternalID
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls--
	if g.records[rec]--; g.records[rec] == 0 {
		delete(g.records, rec)
	}
	if ch.Kind == store.EventMerge {
		g.merging--
	}
}

type gateStats struct {
	maxCalls, maxRecords, maxPerRec int
	besideMerge                     bool
	seen                            map[string][]apply.Change
	seq                             []apply.Change
}

func (g *gateApplier) stats() gateStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	seen := map[string][]apply.Change{}
	for k, v := range g.seen {
		seen[k] = slices.Clone(v)
	}
	return gateStats{g.maxCalls, g.maxRecords, g.maxPerRec, g.besideMrg, seen, slices.Clone(g.seq)}
}

// occurred lists the changes' occurredAt in ms.
func occurred(chs []apply.Change) []int64 {
	out := make([]int64, len(chs))
	for i, ch := range chs {
		out[i] = ch.OccurredAt.UnixMilli()
	}
	return out
}

// TestWorkerAppliesRecordsConcurrently: a cycle applies different records at
// once, at most ApplyConcurrency of them, and never two events of one record.
func TestWorkerAppliesRecordsConcurrently(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate(t, b.applier, 4)
	w := b.newWorker(t, &fakeReader{}, "w1", func(c *WorkerConfig) { c.Applier = g; c.ApplyConcurrency = 4 })
	var evs []hubspot.WebhookEvent
	for id := int64(1); id <= 8; id++ {
		evs = append(evs,
			whEvent("contact.propertyChange", id, t0+id, prop("firstname", "first")),
			whEvent("contact.propertyChange", id, t0+100+id, prop("firstname", "second")))
	}
	b.deliverEvents(t, evs...)
	if n, err := w.RunOnce(context.Background()); n != 16 || err != nil {
		t.Fatalf("RunOnce = %d, %v; want 16 events claimed", n, err)
	}
	st := g.stats()
	if st.maxRecords != 4 || st.maxPerRec != 1 {
		t.Errorf("at most %d records and %d calls of one record in flight; want 4 (ApplyConcurrency) and 1", st.maxRecords, st.maxPerRec)
	}
	if got := b.statusCounts(t); got["processed"] != 16 {
		t.Errorf("statuses %v, want 16 processed", got)
	}
	for id := range 8 {
		if rec, ok := b.applier.record("contacts", strconv.Itoa(id+1)); !ok || rec.Fields["first_name"] != "second" {
			t.Errorf("contact %d = %+v, %v; want its later change last", id+1, rec, ok)
		}
	}
}

// TestWorkerConcurrentAppliesKeepEachRecordsOrder: with records applied at
// once, each record's events still reach the Applier in occurredAt order, and
// a retried event holds back its record's later events (released, no attempt
// used) while the other records go on.
func TestWorkerConcurrentAppliesKeepEachRecordsOrder(t *testing.T) {
	t.Parallel()
	b := setup(t) // MaxAttempts 3, no jitter
	failed := false
	b.applier.fail = func(ch apply.Change) error { // called under the memApplier's lock
		if ch.ExternalID == "1" && ch.OccurredAt.Equal(time.UnixMilli(t0+21)) && !failed {
			failed = true
			return errors.New("deadlock detected")
		}
		return nil
	}
	g := newGate(t, b.applier, 3)
	var (
		mu       sync.Mutex
		outcomes = map[string]int{}
	)
	w := b.newWorker(t, &fakeReader{}, "w1", func(c *WorkerConfig) {
		c.Applier = g
		c.ApplyConcurrency = 3
		c.Hooks.OnOutcome = func(o, _ string) { mu.Lock(); outcomes[o]++; mu.Unlock() }
	})
	// Each record's four changes, delivered out of order.
	var evs []hubspot.WebhookEvent
	for _, id := range []int64{1, 2, 3} {
		for _, at := range []int64{30, 10, 40, 20} {
			evs = append(evs, whEvent("contact.propertyChange", id, t0+at+id, prop("firstname", strconv.FormatInt(at, 10))))
		}
	}
	b.deliverEvents(t, evs...)
	if n, err := w.RunOnce(context.Background()); n != 12 || err != nil {
		t.Fatalf("RunOnce = %d, %v; want 12 events claimed", n, err)
	}
	st := g.stats()
	for _, id := range []int64{2, 3} {
		want := []int64{t0 + 10 + id, t0 + 20 + id, t0 + 30 + id, t0 + 40 + id}
		if got := occurred(st.seen["contacts/"+strconv.FormatInt(id, 10)]); !slices.Equal(got, want) {
			t.Errorf("contact %d's changes reached the Applier at %v, want %v", id, got, want)
		}
	}
	// Contact 1: its first change applied, its second retried, the rest held.
	if got, want := occurred(st.seen["contacts/1"]), []int64{t0 + 11, t0 + 21}; !slices.Equal(got, want) {
		t.Errorf("contact 1's changes reached the Applier at %v, want %v (its later ones wait behind the retried one)", got, want)
	}
	retried, released, processed := 0, 0, 0
	for _, ev := range b.all(t) {
		if ev.ExternalID != "1" {
			if ev.Status != store.StatusProcessed {
				t.Errorf("contact %s's event %s is %s; another record's retry must not hold it", ev.ExternalID, ev.ID, ev.Status)
			}
			continue
		}
		switch {
		case ev.Status == store.StatusProcessed:
			processed++
		case ev.Status == store.StatusPending && ev.RetryCount == 1:
			retried++
		case ev.Status == store.StatusPending && ev.RetryCount == 0:
			released++
		}
	}
	if processed != 1 || retried != 1 || released != 2 {
		t.Errorf("contact 1: %d processed, %d retried, %d released; want 1, 1, 2", processed, retried, released)
	}
	mu.Lock()
	if outcomes[OutcomeReleased] != 2 || outcomes[OutcomeRetry] != 1 || outcomes[OutcomeApplied] != 9 {
		t.Errorf("outcomes %v; want 9 applied, 1 retry, 2 released", outcomes)
	}
	mu.Unlock()
}

// TestWorkerCycleWithMergeAppliesOneAtATime: a merge re-points records other
// than its own, so a cycle that holds one applies every event alone, in
// occurredAt order across records; the cycle's span says so.
func TestWorkerCycleWithMergeAppliesOneAtATime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate(t, b.applier, 0)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	w := b.newWorker(t, &fakeReader{}, "w1", func(c *WorkerConfig) {
		c.Applier = g
		c.ApplyConcurrency = 4
		c.TracerProvider = tp
	})
	var evs []hubspot.WebhookEvent
	for id := int64(1); id <= 6; id++ {
		evs = append(evs, whEvent("contact.propertyChange", id, t0+id*10, prop("firstname", "x")))
	}
	evs = append(evs, whEvent("contact.merge", 7, t0+35, func(ev *hubspot.WebhookEvent) {
		ev.PrimaryObjectID, ev.MergedObjectIDs, ev.NewObjectID = 7, []int64{2}, 7
	}))
	b.deliverEvents(t, evs...)
	if n, err := w.RunOnce(context.Background()); n != 7 || err != nil {
		t.Fatalf("RunOnce = %d, %v; want 7 events claimed", n, err)
	}
	st := g.stats()
	if st.besideMerge || st.maxCalls != 1 {
		t.Errorf("with a merge in the cycle: %d calls in flight at most, a call beside the merge: %v; want one at a time", st.maxCalls, st.besideMerge)
	}
	want := []int64{t0 + 10, t0 + 20, t0 + 30, t0 + 35, t0 + 40, t0 + 50, t0 + 60}
	if got := occurred(st.seq); !slices.Equal(got, want) {
		t.Errorf("calls at %v, want occurredAt order across records %v", got, want)
	}
	if got := cycleConcurrency(t, exp); got != 1 {
		t.Errorf("the cycle's %s is %d, want 1", attrApplyConcurrency, got)
	}

	// Without a merge the next cycle applies records at once again.
	exp.Reset()
	b.deliverEvents(t, whEvent("contact.propertyChange", 1, t0+100, prop("firstname", "y")),
		whEvent("contact.propertyChange", 3, t0+100, prop("firstname", "y")))
	if n, err := w.RunOnce(context.Background()); n != 2 || err != nil {
		t.Fatalf("RunOnce = %d, %v; want 2 events claimed", n, err)
	}
	if got := cycleConcurrency(t, exp); got != 2 {
		t.Errorf("the merge-free cycle's %s is %d, want 2 (its two records)", attrApplyConcurrency, got)
	}
}

// cycleConcurrency returns the one cycle span's apply concurrency.
func cycleConcurrency(t *testing.T, exp *tracetest.InMemoryExporter) int64 {
	t.Helper()
	for _, s := range exp.GetSpans() {
		if s.Name != "hubsync.inbound.cycle" {
			continue
		}
		for _, a := range s.Attributes {
			if string(a.Key) == attrApplyConcurrency {
				return a.Value.AsInt64()
			}
		}
		t.Fatalf("the cycle span has no %s", attrApplyConcurrency)
	}
	t.Fatal("no cycle span")
	return 0
}

// TestWorkerApplyConcurrencyOne: ApplyConcurrency 1 applies one event at a
// time, in occurredAt order across records, as before concurrent applies.
func TestWorkerApplyConcurrencyOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate(t, b.applier, 0)
	w := b.newWorker(t, &fakeReader{}, "w1", func(c *WorkerConfig) { c.Applier = g; c.ApplyConcurrency = 1 })
	var evs []hubspot.WebhookEvent
	var want []int64
	for id := int64(1); id <= 4; id++ {
		evs = append(evs, whEvent("contact.propertyChange", id, t0+id, prop("firstname", "a")),
			whEvent("contact.propertyChange", id, t0+10+id, prop("firstname", "b")))
	}
	for id := int64(1); id <= 4; id++ {
		want = append(want, t0+id)
	}
	for id := int64(1); id <= 4; id++ {
		want = append(want, t0+10+id)
	}
	b.deliverEvents(t, evs...)
	if n, err := w.RunOnce(context.Background()); n != 8 || err != nil {
		t.Fatalf("RunOnce = %d, %v; want 8 events claimed", n, err)
	}
	st := g.stats()
	if st.maxCalls != 1 {
		t.Errorf("%d calls in flight at once with ApplyConcurrency 1, want 1", st.maxCalls)
	}
	if got := occurred(st.seq); !slices.Equal(got, want) {
		t.Errorf("calls at %v, want occurredAt order across records %v", got, want)
	}
}

func TestWorkerApplyConcurrencyValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, n := range []int{-1, ApplyConcurrencyMax + 1} {
		_, err := NewWorker(WorkerConfig{Store: b.store.Inbound(), Applier: b.applier, HubSpot: &fakeReader{}, ApplyConcurrency: n})
		if err == nil || !strings.Contains(err.Error(), "WorkerConfig.ApplyConcurrency") || !strings.Contains(err.Error(), "use 1..") {
			t.Errorf("ApplyConcurrency %d: err = %v; want it to name the field and the range", n, err)
		}
	}
	for _, n := range []int{0, 1, ApplyConcurrencyMax} {
		if _, err := NewWorker(WorkerConfig{Store: b.store.Inbound(), Applier: b.applier, HubSpot: &fakeReader{}, ApplyConcurrency: n}); err != nil {
			t.Errorf("ApplyConcurrency %d: %v", n, err)
		}
	}
}

// TestWorkerHardStopEndsConcurrentApplies: cancelling a cycle ends every
// apply in flight, and its events, the records' later ones with them, are
// released without a failure.
func TestWorkerHardStopEndsConcurrentApplies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ba := &blockingApplier{inner: b.applier, entered: make(chan struct{}, 2), release: make(chan struct{})}
	w := b.newWorker(t, &fakeReader{}, "svc", func(c *WorkerConfig) { c.Applier = ba; c.ApplyConcurrency = 2; c.PollInterval = time.Hour })
	b.deliverEvents(t,
		whEvent("contact.propertyChange", 1, t0, prop("firstname", "Never")),
		whEvent("contact.propertyChange", 1, t0+10, prop("lastname", "Never")),
		whEvent("contact.propertyChange", 2, t0, prop("firstname", "Never")),
		whEvent("contact.propertyChange", 2, t0+10, prop("lastname", "Never")),
	)
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // on a failure below; Stop is idempotent
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = w.Stop(ctx)
	})
	testwait.Recv(t, "the first record's apply", ba.entered)
	testwait.Recv(t, "the second record's apply, beside the first", ba.entered)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop = %v, want context.Canceled", err)
	}
	for _, ev := range b.all(t) {
		if ev.Status != store.StatusPending || ev.RetryCount != 0 {
			t.Errorf("event %s of contact %s: status %s retries %d; want released without a failure", ev.ID, ev.ExternalID, ev.Status, ev.RetryCount)
		}
	}
	if n := b.applier.numCalls(); n != 0 {
		t.Errorf("%d changes applied by a cancelled cycle", n)
	}
}

// TestWorkerConcurrentFencedApplies: records.Service applies records at once
// on every database, each apply fenced and completed in its own transaction,
// and every record ends at its latest change. On MariaDB concurrent creations
// can deadlock on the links table (InnoDB's gap locks; about one run in five
// did); records.Service runs the victim's transaction again, so no event
// needs a retry: one drain processes them all. (records'
// TestDeadlockIsRetried makes a deadlock deterministically.)
func TestWorkerConcurrentFencedApplies(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setupDialect(t, d, store.RetryPolicy{NoJitter: true})
		recs, err := records.New(b.store, nil, records.Config{})
		if err != nil {
			t.Fatal(err)
		}
		const n = 12
		reader := &fakeReader{objects: map[string]hubspot.Object{}}
		var evs []hubspot.WebhookEvent
		for id := int64(1); id <= n; id++ {
			ext := strconv.FormatInt(id, 10)
			reader.objects[ext] = contactObj(ext, "c"+ext+"@example.com", "first", time.UnixMilli(t0))
			evs = append(evs, whEvent("contact.creation", id, t0),
				whEvent("contact.propertyChange", id, t0+10, prop("lastname", "older")),
				whEvent("contact.propertyChange", id, t0+20, prop("lastname", "latest")))
		}
		b.deliverEvents(t, evs...)
		g := fencedGate{newGate(t, recs, 4)}
		w := b.newWorker(t, reader, "w1", func(c *WorkerConfig) { c.Applier = g; c.ApplyConcurrency = 4 })
		drain(t, w)
		if got := b.statusCounts(t); got["processed"] != 3*n {
			t.Fatalf("statuses %v after one drain; want %d processed", got, 3*n)
		}
		for _, ev := range b.all(t) {
			if ev.RetryCount != 0 {
				t.Errorf("event %s (%s of contact %s) was retried %d times (%s); want none", ev.ID, ev.EventType, ev.ExternalID, ev.RetryCount, ev.ErrorMessage)
			}
		}
		if st := g.stats(); st.maxRecords != 4 || st.maxPerRec != 1 {
			t.Errorf("at most %d records and %d calls of one record in flight; want 4 and 1", st.maxRecords, st.maxPerRec)
		}
		rs, err := recs.List(context.Background(), "contacts", records.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != n {
			t.Fatalf("%d contacts, want %d", len(rs), n)
		}
		for _, r := range rs {
			if r.Fields["last_name"] != "latest" || r.Fields["first_name"] != "first" {
				t.Errorf("contact %s = %v; want created from HubSpot, then its latest last_name", r.ID, r.Fields)
			}
		}
	})
}
