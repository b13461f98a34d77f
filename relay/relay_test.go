package relay

import (
	"context"
	"errors"
	"fmt"
	"github.com/hubsync/hubsync/internal/testwait"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/pgstore"
	"github.com/hubsync/hubsync/store/sqlitestore"
	"github.com/hubsync/hubsync/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// database/sql keeps a connection opener per *sql.DB until Close, which
		// dbtest does in t.Cleanup.
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
}

type bundle struct {
	st    store.Store
	clock *storetest.Clock
	bus   *Bus
}

func setup(t *testing.T) *bundle {
	t.Helper()
	clock := storetest.NewClock(time.Time{})
	st, err := sqlitestore.New(dbtest.Migrated(t, store.SQLite).DB, store.Config{
		Now:   clock.Now,
		Retry: store.RetryPolicy{BackoffBase: time.Second, NoJitter: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{st: st, clock: clock, bus: NewBus()}
}

func (b *bundle) enqueue(t *testing.T, record string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		res, err := b.st.Internal().EnqueueTx(context.Background(), b.st.DB(), store.InternalEvent{
			EventType: store.EventRecordUpdated, ObjectType: "contacts", RecordID: record,
			Payload: []byte(fmt.Sprintf(`{"id":%q,"version":%d,"fields":{}}`, record, i+1)),
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	return ids
}

func (b *bundle) newRelay(t *testing.T, owner string) *Relay {
	t.Helper()
	return b.startRelay(t, Config{Owner: owner, PollInterval: time.Hour, LeaseDuration: time.Minute, BatchSize: 4, Logger: quiet})
}

// startRelay starts a relay with cfg and stops it when the test ends.
func (b *bundle) startRelay(t *testing.T, cfg Config) *Relay {
	t.Helper()
	r, err := New(b.st, b.bus, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return r
}

func (b *bundle) allProcessed(t *testing.T, ids []string) func() bool {
	return func() bool {
		for _, id := range ids {
			ev, err := b.st.Internal().Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Status != store.StatusProcessed {
				return false
			}
		}
		return true
	}
}

// recorder is a subscriber that records what it saw.
type recorder struct {
	mu   sync.Mutex
	seen []store.InternalEvent
}

func (r *recorder) handle(_ context.Context, ev store.InternalEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, ev)
	return nil
}

func (r *recorder) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.seen))
	for i, ev := range r.seen {
		out[i] = ev.ID
	}
	return out
}

func TestDeliversToEverySubscriberInOrder(t *testing.T) {
	b := setup(t)
	var a, c recorder
	if err := b.bus.Subscribe("a", a.handle); err != nil {
		t.Fatal(err)
	}
	if err := b.bus.Subscribe("c", c.handle); err != nil {
		t.Fatal(err)
	}
	if err := b.bus.Subscribe("a", a.handle); !errors.Is(err, ErrDuplicateSubscriber) {
		t.Fatalf("duplicate subscribe: %v", err)
	}
	r1 := b.enqueue(t, "r1", 5)
	r2 := b.enqueue(t, "r2", 3)
	r := b.newRelay(t, "relay-1")
	r.Notify()
	all := append(append([]string{}, r1...), r2...)
	testwait.For(t, "every event processed", b.allProcessed(t, all))
	for _, rec := range []*recorder{&a, &c} {
		got := rec.ids()
		if len(got) != len(all) {
			t.Fatalf("subscriber saw %d events, want %d", len(got), len(all))
		}
		for _, want := range [][]string{r1, r2} {
			var order []string
			for _, id := range got {
				for _, w := range want {
					if id == w {
						order = append(order, id)
					}
				}
			}
			if fmt.Sprint(order) != fmt.Sprint(want) {
				t.Fatalf("events of one record out of order: %v, want %v", order, want)
			}
		}
	}
}

func TestSubscriberErrorRetries(t *testing.T) {
	b := setup(t)
	var ok recorder
	var mu sync.Mutex
	failures := 1
	if err := b.bus.Subscribe("ok", ok.handle); err != nil {
		t.Fatal(err)
	}
	if err := b.bus.Subscribe("flaky", func(context.Context, store.InternalEvent) error {
		mu.Lock()
		defer mu.Unlock()
		if failures > 0 {
			failures--
			return errors.New("downstream unavailable")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ids := b.enqueue(t, "r1", 2)
	r := b.newRelay(t, "relay-1")
	r.Notify()
	testwait.For(t, "the failure recorded", func() bool {
		ev, err := b.st.Internal().Get(context.Background(), ids[0])
		return err == nil && ev.RetryCount == 1 && ev.Status == store.StatusPending
	})
	if got := ok.ids(); len(got) != 1 || got[0] != ids[0] {
		t.Fatalf("before the retry the healthy subscriber saw %v; the second event must wait for the first", got)
	}
	b.clock.Advance(time.Minute) // past the backoff
	r.Notify()
	testwait.For(t, "every event processed", b.allProcessed(t, ids))
	if got := ok.ids(); fmt.Sprint(got) != fmt.Sprint([]string{ids[0], ids[0], ids[1]}) {
		t.Fatalf("healthy subscriber saw %v; want the first event twice (at least once), then the second", got)
	}
}

func TestAtLeastOnceAcrossCrash(t *testing.T) {
	b := setup(t)
	started := make(chan string, 10)
	var mu sync.Mutex
	deliveries := map[string]int{}
	crashing := true
	if err := b.bus.Subscribe("s", func(ctx context.Context, ev store.InternalEvent) error {
		mu.Lock()
		deliveries[ev.ID]++
		block := crashing
		mu.Unlock()
		if block {
			started <- ev.ID
			<-ctx.Done() // the process dies while handling the event
			return ctx.Err()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ids := b.enqueue(t, "r1", 2)
	ids = append(ids, b.enqueue(t, "r2", 1)...)

	r1, err := New(b.st, b.bus, Config{Owner: "relay-1", PollInterval: time.Hour, LeaseDuration: time.Minute, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := r1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := testwait.Recv(t, "the first handler to start", started)
	r1.crash()
	ev, err := b.st.Internal().Get(context.Background(), first)
	if err != nil || ev.Status != store.StatusProcessing || ev.LeaseOwner != "relay-1" {
		t.Fatalf("after the crash the event is %+v, %v; want still leased by relay-1", ev.QueueState, err)
	}
	mu.Lock()
	crashing = false
	mu.Unlock()

	r2 := b.newRelay(t, "relay-2")
	b.clock.Advance(time.Minute + time.Second) // the dead relay's leases expire
	r2.Notify()
	testwait.For(t, "every event processed by the second relay", b.allProcessed(t, ids))
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if deliveries[id] < 1 {
			t.Fatalf("event %s never delivered", id)
		}
	}
	if deliveries[first] < 2 {
		t.Fatalf("event %s delivered %d times; the crashed delivery must be repeated", first, deliveries[first])
	}
}

func TestStopIsGracefulAndIdempotent(t *testing.T) {
	b := setup(t)
	r, err := New(b.st, b.bus, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(context.Background()); err != nil {
		t.Fatalf("stop before start: %v", err)
	}
	if err := r.Start(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("start after a stop before start: %v, want ErrStopped (a relay runs once)", err)
	}
	if r, err = New(b.st, b.bus, Config{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); !errors.Is(err, ErrStarted) {
		t.Fatalf("second start: %v", err)
	}
	for range 2 {
		if err := r.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-r.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	if _, err := New(b.st, b.bus, Config{BatchSize: -1}); err == nil {
		t.Fatal("negative BatchSize accepted")
	}
}

var quiet = slog.New(slog.DiscardHandler)

// TestHeartbeatKeepsSlowDeliveryLeased: with a 1 s lease, a delivery that
// lasts several leases keeps its batch leased while it runs (a heartbeat
// extends the leases every third of it), so no other relay claims it, and
// the event is completed once the subscriber returns. Without a heartbeat the
// lease would have to cover the slowest delivery, and a crashed relay's
// events would wait that long.
func TestHeartbeatKeepsSlowDeliveryLeased(t *testing.T) {
	b := setup(t)
	entered, release := make(chan string, 1), make(chan struct{})
	if err := b.bus.Subscribe("slow", func(_ context.Context, ev store.InternalEvent) error {
		entered <- ev.ID
		<-release
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ids := b.enqueue(t, "r1", 1)
	b.startRelay(t, Config{Owner: "relay-1", PollInterval: time.Hour, LeaseDuration: time.Second, Logger: quiet})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before the Stop above, should the test fail first
	id := testwait.Recv(t, "the slow delivery", entered)

	// Step the clock 3 leases ahead, 0.6 s at a time; after each step a
	// heartbeat must have moved the expiry to at least the new now + 0.6 s,
	// which no heartbeat from before the step could do.
	for range 5 {
		b.clock.Advance(600 * time.Millisecond)
		want := b.clock.Now().Add(600 * time.Millisecond)
		testwait.For(t, "a heartbeat extending the lease past "+want.String(), func() bool {
			ev, err := b.st.Internal().Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			return ev.LeaseExpiresDate != nil && !ev.LeaseExpiresDate.Before(want)
		})
	}
	stolen, err := b.st.Internal().Claim(context.Background(), store.ClaimParams{Limit: 10, LeaseDuration: time.Minute, Owner: "relay-2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(stolen) != 0 {
		t.Fatalf("another relay claimed %d events while the slow delivery's heartbeat held them", len(stolen))
	}
	unblock()
	testwait.For(t, "the slow delivery completed", b.allProcessed(t, ids))
}

func TestConfigRejectsLeaseShorterThanASecond(t *testing.T) {
	_, err := New(setup(t).st, NewBus(), Config{LeaseDuration: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "Config.LeaseDuration") || !strings.Contains(err.Error(), "at least 1s") {
		t.Fatalf("New with a 100ms lease: %v; want an error naming Config.LeaseDuration and the fix", err)
	}
}

// completeCounter is a store whose internal queue counts its Complete calls.
type completeCounter struct {
	store.Store
	q *countingQueue
}

func (c completeCounter) Internal() store.Queue[store.InternalEvent] { return c.q }

type countingQueue struct {
	store.Queue[store.InternalEvent]
	mu    sync.Mutex
	calls []int // leases per Complete call
}

func (q *countingQueue) Complete(ctx context.Context, leases ...store.Lease) error {
	q.mu.Lock()
	q.calls = append(q.calls, len(leases))
	q.mu.Unlock()
	return q.Queue.Complete(ctx, leases...)
}

// TestBatchCompletesInOneCall: the relay marks a batch's delivered events
// processed with one store call, not one per event. A round trip per event
// (with PostgreSQL's lane triggers, a transaction each) made the relay the
// slowest queue: a killed relay's events, claimed again behind the backlog
// that this built, took 20-54 s from the kill to processed (issue 16).
func TestBatchCompletesInOneCall(t *testing.T) {
	b := setup(t)
	var ids []string
	for _, rec := range []string{"r1", "r2", "r3"} {
		ids = append(ids, b.enqueue(t, rec, 2)...)
	}
	cq := &countingQueue{Queue: b.st.Internal()}
	r, err := New(completeCounter{Store: b.st, q: cq}, b.bus, Config{Owner: "relay-1", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.RunOnce(context.Background()); n != len(ids) || err != nil {
		t.Fatalf("RunOnce = %d, %v; want the %d events, no error", n, err, len(ids))
	}
	if !b.allProcessed(t, ids)() {
		t.Fatal("the batch is not processed after RunOnce")
	}
	if fmt.Sprint(cq.calls) != fmt.Sprint([]int{len(ids)}) {
		t.Fatalf("Complete calls (leases each): %v; want one call with the batch's %d leases", cq.calls, len(ids))
	}
}

// TestCrashedRelaysEventsAtTheFirstClaimAfterExpiry: a relay that dies
// mid-batch leaves its events leased; another relay's claims take none of
// them while the leases live, and its first claim after they expire takes
// every one of them (no record held back behind the dead lease), on each
// backend with a store-side claim. The clock is the stores', stepped by hand,
// so "first claim after expiry" is exact.
func TestCrashedRelaysEventsAtTheFirstClaimAfterExpiry(t *testing.T) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			b := setupDialect(t, d)
			const lease = 2 * time.Second
			started := make(chan string, 10)
			var crashing atomic.Bool
			crashing.Store(true)
			if err := b.bus.Subscribe("s", func(ctx context.Context, ev store.InternalEvent) error {
				if crashing.Load() {
					started <- ev.ID
					<-ctx.Done() // the process dies while handling the event
					return ctx.Err()
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, rec := range []string{"r1", "r2", "r3"} {
				ids = append(ids, b.enqueue(t, rec, 2)...)
			}
			r1, err := New(b.st, b.bus, Config{Owner: "relay-1", PollInterval: time.Hour, LeaseDuration: lease, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			if err := r1.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			testwait.Recv(t, "the first delivery", started)
			r1.crash()
			crashing.Store(false)

			r2, err := New(b.st, b.bus, Config{Owner: "relay-2", PollInterval: time.Hour, LeaseDuration: lease, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			b.clock.Advance(lease) // the last instant of the dead relay's leases
			if n, err := r2.RunOnce(context.Background()); n != 0 || err != nil {
				t.Fatalf("a claim while the dead relay's leases live took %d events (%v); want none", n, err)
			}
			b.clock.Advance(time.Millisecond)
			if n, err := r2.RunOnce(context.Background()); n != len(ids) || err != nil {
				t.Fatalf("the first claim after the leases expired took %d events (%v); want all %d", n, err, len(ids))
			}
			if !b.allProcessed(t, ids)() {
				t.Fatal("the dead relay's events are not processed after the second relay's first claim")
			}
		})
	}
}

// setupDialect is setup on the test database of dialect d.
func setupDialect(t *testing.T, d store.Dialect) *bundle {
	t.Helper()
	clock := storetest.NewClock(time.Time{})
	cfg := store.Config{Now: clock.Now, Retry: store.RetryPolicy{BackoffBase: time.Second, NoJitter: true}}
	db := dbtest.Migrated(t, d).DB
	var st store.Store
	var err error
	switch d {
	case store.SQLite:
		st, err = sqlitestore.New(db, cfg)
	case store.Postgres:
		st, err = pgstore.New(db, cfg)
	default:
		t.Fatalf("no store for %s", d)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{st: st, clock: clock, bus: NewBus()}
}
