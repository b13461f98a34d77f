package outbound_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/hubsync/hubsync/internal/testwait"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

func TestConfigValidation(t *testing.T) {
	b := setup(t, options{})
	_, err := outbound.NewWorker(outbound.Config{Store: b.st.Outbound(), HubSpot: b.client, Links: b.links, Budget: b.budget,
		HTTPTimeout: 30 * time.Second, LeaseDuration: 500 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "raise LeaseDuration") {
		t.Fatalf("err = %v, want a LeaseDuration complaint", err)
	}
	if _, err := outbound.NewWorker(outbound.Config{}); err == nil || !strings.Contains(err.Error(), "Config.Store") {
		t.Fatalf("err = %v, want missing Store", err)
	}
}

// TestConvergesUnderFaults: many local changes to contacts and companies with
// 5xx, 423, 429 and hangs past the client timeout; every record ends in
// HubSpot exactly as it is locally, without duplicates or dead letters.
func TestConvergesUnderFaults(t *testing.T) {
	t.Parallel()
	b := setup(t, options{timeout: 300 * time.Millisecond, faults: hubspotsim.Faults{
		Error500: 0.08, Error502: 0.04, Error503: 0.08, Error423: 0.05, Error429: 0.05,
		HangProbability: 0.05, HangDuration: 2 * time.Second,
	}})
	w := b.worker(t, func(c *outbound.Config) { c.BatchSize = 25; c.LeaseDuration = time.Minute })
	wl := newWorkload(b, 1)
	for round := range 4 {
		for range 80 {
			wl.step(t, true)
		}
		if round%2 == 0 {
			b.drain(t, w)
		}
	}
	b.drain(t, w)
	b.verify(t, "contacts")
	b.verify(t, "companies")
	if n := b.counts(t)[store.StatusFailed]; n != 0 {
		dl, _ := b.st.Outbound().DeadLetters(context.Background(), store.DeadLetterFilter{})
		t.Fatalf("%d dead letters, want none: %+v", n, dl)
	}
	m := w.Metrics().Snapshot()
	if m.Retried == 0 || m.RateLimited == 0 {
		t.Errorf("faults did not bite: %+v", m)
	}
	t.Logf("metrics: %+v; sim faults %v", m, b.sim.Counters().FaultsInjected)
}

// TestDroppedConnections: connections dropped before or after HubSpot applied
// the write; contact upserts are idempotent, so retries never duplicate.
func TestDroppedConnections(t *testing.T) {
	t.Parallel()
	b := setup(t, options{faults: hubspotsim.Faults{DropProbability: 0.25, Error503: 0.1}})
	w := b.worker(t, func(c *outbound.Config) { c.BatchSize = 20 })
	wl := newWorkload(b, 2)
	for range 3 {
		for range 60 {
			wl.step(t, false)
		}
		b.drain(t, w)
	}
	b.verify(t, "contacts")
	if n := b.counts(t)[store.StatusFailed]; n != 0 {
		t.Fatalf("%d dead letters, want none", n)
	}
	if b.sim.Counters().FaultsInjected["drop"] == 0 {
		t.Fatal("no connection was dropped")
	}
}

// TestPartialFailures: 207 answers fail single inputs with a validation
// error. Exactly those records are dead-lettered, with HubSpot's message; the
// rest of their batches succeed; a requeue after the fault clears converges.
func TestPartialFailures(t *testing.T) {
	t.Parallel()
	b := setup(t, options{faults: hubspotsim.Faults{PartialFailure: 0.15}})
	w := b.worker(t, nil)
	// One event per record: a dead letter then blocks nothing else, and the
	// requeue below replays exactly the lost change (see the package doc on
	// requeueing a record's older change).
	wl := newWorkload(b, 3)
	for i := range 120 {
		wl.insert(t, "contacts", map[string]any{"email": fmt.Sprintf("pf%d@example.com", i), "phone": "1"})
	}
	b.drain(t, w)
	ctx := context.Background()
	dl, err := b.st.Outbound().DeadLetters(ctx, store.DeadLetterFilter{Key: "hubspot", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(dl) == 0 {
		t.Fatal("no dead letters; the fault did not bite")
	}
	for _, e := range dl {
		if !strings.Contains(e.ErrorMessage, "injected partial failure") || e.RetryCount != 0 {
			t.Fatalf("dead letter %s: %q (retries %d), want the validation message at once", e.ID, e.ErrorMessage, e.RetryCount)
		}
	}
	if got := b.sim.Counters().RequestsByPath["POST /crm/v3/objects/contacts/batch/upsert"]; got == 0 {
		t.Fatal("no upserts")
	}
	if err := b.sim.SetFaults(hubspotsim.Faults{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.st.Outbound().RequeueAll(ctx, "hubspot"); err != nil {
		t.Fatal(err)
	}
	b.drain(t, w)
	b.verify(t, "contacts")
}

// TestCoalescingReducesCalls: ten changes to each of 30 contacts cost one
// upsert call when they are claimed together, against one call per change
// when each is pushed before the next is made. It runs on memRepo, which
// hands out a record's events together (see memRepo).
func TestCoalescingReducesCalls(t *testing.T) {
	t.Parallel()
	run := func(coalesce bool) (calls int64, b *bundle) {
		b = setup(t, options{})
		repo := newMemRepo(b.clock.Now)
		w := b.worker(t, func(c *outbound.Config) { c.BatchSize = 1000; c.Store = repo })
		ctx := context.Background()
		enqueue := func(id string, old, new map[string]any) {
			ev := store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: id, EventType: store.EventUpdate}
			if old == nil {
				ev.EventType = store.EventCreate
			} else {
				ev.OldPayload, _ = outbox.Snapshot{ID: id, Fields: old}.Marshal()
			}
			ev.Payload, _ = outbox.Snapshot{ID: id, Fields: new}.Marshal()
			if _, err := repo.Enqueue(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
		drain := func() {
			for repo.unfinished() > 0 {
				if _, err := w.RunOnce(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		state := map[string]map[string]any{}
		for i := range 30 {
			id := fmt.Sprint("hot", i)
			state[id] = map[string]any{"email": fmt.Sprintf("hot%d@example.com", i)}
			enqueue(id, nil, state[id])
		}
		if !coalesce {
			drain()
		}
		for n := range 10 {
			for i := range 30 {
				id := fmt.Sprint("hot", i)
				next := map[string]any{"email": state[id]["email"], "first_name": fmt.Sprint("v", n)}
				enqueue(id, state[id], next)
				state[id] = next
			}
			if !coalesce {
				drain()
			}
		}
		drain()
		for id, f := range state {
			objID, ok, _ := b.links.Lookup(ctx, "hubspot", "contacts", id)
			o, found := b.sim.Object("contacts", objID)
			if !ok || !found || o.Properties["firstname"] != f["first_name"] || o.Properties["email"] != f["email"] {
				t.Fatalf("%s: HubSpot has %+v, want %v", id, o.Properties, f)
			}
		}
		return w.Metrics().Snapshot().TotalCalls(), b
	}
	hot, b := run(true)
	cold, _ := run(false)
	if hot != 1 || cold != 11 {
		t.Fatalf("calls: coalesced %d (want 1), one by one %d (want 11)", hot, cold)
	}
	if got := b.sim.Counters().Requests; got != 1 {
		t.Fatalf("simulator saw %d requests, want 1", got)
	}
}

// TestSyncSourcedNotEchoed: a change applied from HubSpot completes without a call.
func TestSyncSourcedNotEchoed(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w := b.worker(t, nil)
	ctx := context.Background()
	id := "rec-1"
	snap := outbox.Snapshot{ID: id, Fields: map[string]any{"email": "x@example.com"}, Metadata: map[string]string{outbox.MetadataSyncSource: "hubspot"}}
	payload, _ := snap.Marshal()
	if _, err := b.st.Outbound().Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: id, EventType: store.EventCreate, Payload: payload}); err != nil {
		t.Fatal(err)
	}
	s := b.drain(t, w)
	if s.Calls != 0 || s.Skipped != 1 || b.sim.Counters().Requests != 0 {
		t.Fatalf("summary %+v, sim requests %d; want one event completed without a call", s, b.sim.Counters().Requests)
	}
}

// TestConflictAdoption: with a mapping that creates contacts (no IDProperty),
// a contact that already exists in HubSpot answers 409; the worker adopts its
// id and updates it instead of creating a duplicate, and the other records of
// the batch go through.
func TestConflictAdoption(t *testing.T) {
	t.Parallel()
	def := mapping.Default()
	contacts, _ := def.Lookup("contacts")
	contacts.IDProperty, contacts.IDField = "", ""
	companies, _ := def.Lookup("companies")
	m, err := mapping.NewSet(contacts, companies)
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, options{mapping: m})
	existing, err := b.sim.UserCreate("contacts", map[string]string{"email": "taken@example.com", "firstname": "Old"})
	if err != nil {
		t.Fatal(err)
	}
	w := b.worker(t, nil)
	wl := newWorkload(b, 5)
	var taken string
	for i := range 6 {
		email := fmt.Sprintf("free%d@example.com", i)
		if i == 3 {
			email = "taken@example.com"
		}
		id := wl.insert(t, "contacts", map[string]any{"email": email, "first_name": "New", "phone": "5"})
		if i == 3 {
			taken = id
		}
	}
	b.drain(t, w)
	b.verify(t, "contacts")
	id, ok, err := b.links.Lookup(context.Background(), "hubspot", "contacts", taken)
	if err != nil || !ok || id != existing {
		t.Fatalf("link of the taken contact = %q, %v, %v; want the existing %s", id, ok, err, existing)
	}
	mm := w.Metrics().Snapshot()
	if mm.Adopted != 1 || mm.Splits == 0 {
		t.Fatalf("adopted %d, splits %d; want 1 adoption after splitting", mm.Adopted, mm.Splits)
	}
	if c := b.sim.Counters(); c.ObjectsCreated != 6 {
		t.Fatalf("objects created %d, want 6 (1 by the user, 5 by the worker)", c.ObjectsCreated)
	}
}

// TestBudgetNeverExceeded: a budget that knows HubSpot's limit keeps the
// worker from ever meeting a 429, and waits rather than failing.
func TestBudgetNeverExceeded(t *testing.T) {
	t.Parallel()
	b := setup(t, options{tenSecond: 5, budgetLimit: 5})
	// Without filling, so that small calls push the budget to refuse.
	w1 := b.worker(t, func(c *outbound.Config) { c.BatchSize = 10; c.FillWait = -1 })
	w2 := b.worker(t, func(c *outbound.Config) { c.BatchSize = 10; c.FillWait = -1 })
	wl := newWorkload(b, 6)
	for range 150 {
		wl.step(t, true)
	}
	b.drain(t, w1, w2)
	b.verify(t, "contacts")
	b.verify(t, "companies")
	c := b.sim.Counters()
	if n := c.RateLimited429["TEN_SECONDLY_ROLLING"]; n != 0 {
		t.Fatalf("%d real 429s", n)
	}
	m1, m2 := w1.Metrics().Snapshot(), w2.Metrics().Snapshot()
	if m1.BudgetDenied+m2.BudgetDenied == 0 {
		t.Fatal("the budget never refused; the test did not push it")
	}
	if m1.Retried+m2.Retried != 0 {
		t.Fatalf("budget refusals used attempts: %d", m1.Retried+m2.Retried)
	}
}

// TestAuthErrorReleases: a bad token is a configuration problem: events are
// released without using an attempt and the cycle reports ErrAuth.
func TestAuthErrorReleases(t *testing.T) {
	t.Parallel()
	b := setup(t, options{token: "wrong"})
	w := b.worker(t, nil)
	wl := newWorkload(b, 7)
	id := wl.insert(t, "contacts", map[string]any{"email": "a@example.com"})
	_, err := w.RunOnce(context.Background())
	if !errors.Is(err, outbound.ErrAuth) {
		t.Fatalf("err = %v, want ErrAuth", err)
	}
	c := b.counts(t)
	if c[store.StatusPending] != 1 {
		t.Fatalf("queue %v, want the event pending", c)
	}
	evs, _ := b.st.Outbound().GetPending(context.Background(), "hubspot", 10)
	if len(evs) != 0 {
		t.Fatalf("event claimable at once; want it held for AuthRetryDelay")
	}
	_ = id
}

// TestProcessIDs: the push path processes exactly the named events.
func TestProcessIDs(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	w := b.worker(t, nil)
	ctx := context.Background()
	wl := newWorkload(b, 8)
	wl.insert(t, "contacts", map[string]any{"email": "a@example.com"})
	wl.insert(t, "contacts", map[string]any{"email": "b@example.com"})
	pend, err := b.st.Outbound().GetPending(ctx, "hubspot", 10)
	if err != nil || len(pend) != 2 {
		t.Fatalf("pending %d, %v", len(pend), err)
	}
	s, err := w.ProcessIDs(ctx, []string{pend[1].ID})
	if err != nil || s.Claimed != 1 || s.Completed != 1 {
		t.Fatalf("ProcessIDs = %+v, %v", s, err)
	}
	if objs := b.sim.Objects("contacts"); len(objs) != 1 || objs[0].Properties["email"] != "b@example.com" {
		t.Fatalf("HubSpot has %+v, want only b", objs)
	}
}

// TestTwoWorkersCooperate: two running workers on one store never write one
// event twice.
func TestTwoWorkersCooperate(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	cnt := newCounting(b.client)
	ctx := context.Background()
	var ws []*outbound.Worker
	for range 2 {
		w := b.worker(t, func(c *outbound.Config) { c.HubSpot = cnt; c.BatchSize = 7; c.Now = nil })
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Stop(ctx) })
		ws = append(ws, w)
	}
	wl := newWorkload(b, 9)
	for i := range 100 {
		wl.insert(t, "contacts", map[string]any{"email": fmt.Sprintf("p%d@example.com", i)})
		if i%10 == 0 {
			ws[i%2].Notify()
		}
	}
	testwait.For(t, "queue drained", func() bool {
		c := b.counts(t)
		return c[store.StatusPending] == 0 && c[store.StatusProcessing] == 0
	})
	for _, w := range ws {
		if err := w.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	b.verify(t, "contacts")
	cnt.mu.Lock()
	defer cnt.mu.Unlock()
	if len(cnt.writes) != 100 {
		t.Fatalf("%d records written, want 100", len(cnt.writes))
	}
	for id, n := range cnt.writes {
		if n != 1 {
			t.Fatalf("record %s written %d times", id, n)
		}
	}
	if ws[0].Metrics().Snapshot().Completed == 0 || ws[1].Metrics().Snapshot().Completed == 0 {
		t.Logf("one worker did all the work (allowed, but the test cooperated less than hoped)")
	}
}

// TestKilledWorkerMidBatch: a worker dies after HubSpot applied its upsert but
// before it linked or completed anything. After the lease expires another
// worker finishes the events; HubSpot ends with no duplicate, and the dead
// worker's late completion is fenced off.
func TestKilledWorkerMidBatch(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	block := make(chan struct{})
	var once sync.Once
	reached := make(chan struct{})
	dying := newCounting(b.client)
	dying.after = func(context.Context) error {
		once.Do(func() { close(reached) })
		<-block
		return nil
	}
	dead := b.worker(t, func(c *outbound.Config) { c.HubSpot = dying; c.LeaseDuration = time.Minute })
	wl := newWorkload(b, 10)
	for i := range 10 {
		wl.insert(t, "contacts", map[string]any{"email": fmt.Sprintf("k%d@example.com", i), "first_name": "K"})
	}
	type result struct {
		s   outbound.Summary
		err error
	}
	deadDone := make(chan result, 1)
	go func() {
		s, err := dead.RunOnce(ctx)
		deadDone <- result{s, err}
	}()
	testwait.Recv(t, "the worker to reach HubSpot", reached) // HubSpot has the contacts; the worker is "dead" before linking
	if n := len(b.sim.Objects("contacts")); n != 10 {
		t.Fatalf("HubSpot has %d contacts, want 10", n)
	}
	alive := b.worker(t, nil)
	if s, _ := alive.RunOnce(ctx); s.Claimed != 0 {
		t.Fatalf("claimed %d events still leased by the dead worker", s.Claimed)
	}
	b.clock.Advance(time.Minute + time.Second)
	wl.update(t, "contacts", mustPick(t, wl), map[string]any{"first_name": "After"})
	b.drain(t, alive)
	close(block)
	r := testwait.Recv(t, "the killed worker's cycle to end", deadDone)
	if r.s.Completed != 0 {
		t.Fatalf("the dead worker completed %d events after losing its lease", r.s.Completed)
	}
	b.verify(t, "contacts")
	if c := b.sim.Counters(); c.ObjectsCreated != 10 {
		t.Fatalf("objects created %d, want 10", c.ObjectsCreated)
	}
}

func mustPick(t *testing.T, wl *workload) string {
	id, ok := wl.pick("contacts")
	if !ok {
		t.Fatal("no contact")
	}
	return id
}

// TestGracefulStop: Stop lets the in-flight cycle finish; when Stop's context
// ends first, the cycle's events are released without using an attempt.
func TestGracefulStop(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	block := make(chan struct{})
	reached := make(chan struct{}, 10)
	slow := newCounting(b.client)
	slow.after = func(ctx context.Context) error {
		reached <- struct{}{}
		select {
		case <-block:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	wl := newWorkload(b, 11)
	wl.insert(t, "contacts", map[string]any{"email": "g1@example.com"})

	w := b.worker(t, func(c *outbound.Config) { c.HubSpot = slow })
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, "the worker to reach HubSpot", reached)
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	close(block) // the in-flight call returns; Stop must wait for its bookkeeping
	if err := testwait.Recv(t, "Stop to return", stopped); err != nil {
		t.Fatal(err)
	}
	if c := b.counts(t); c[store.StatusProcessed] != 1 {
		t.Fatalf("queue %v after graceful stop, want the event processed", c)
	}

	// Hard: Stop's context ends while the call hangs.
	wl.insert(t, "contacts", map[string]any{"email": "g2@example.com"})
	slow.after = func(ctx context.Context) error {
		reached <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}
	w2 := b.worker(t, func(c *outbound.Config) { c.HubSpot = slow })
	if err := w2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, "the worker to reach HubSpot", reached)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w2.Stop(ctx); err == nil {
		t.Fatal("Stop with an ended context returned nil")
	}
	c := b.counts(t)
	if c[store.StatusPending] != 1 || c[store.StatusProcessing] != 0 {
		t.Fatalf("queue %v after hard stop, want the event released", c)
	}
	evs, _ := b.st.Outbound().GetPending(context.Background(), "hubspot", 10)
	if len(evs) != 1 || evs[0].RetryCount != 0 {
		t.Fatalf("released event %+v, want claimable with no retry used", evs)
	}
	if err := w2.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop = %v, want nil (idempotent)", err)
	}
}

var _ = hubspot.KindOf
