package inbound

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/store"
)

// recordingWrite is a group commit write func: it records each call's events,
// can hold calls until released, fails calls holding a poisoned key, and
// answers each event with its key as id.
type recordingWrite struct {
	mu      sync.Mutex
	calls   [][]string
	hold    chan struct{} // when non-nil, every call waits on it
	started chan int      // receives the number of events of each call
	poison  string
}

// keysOf returns the idempotency keys of evs, in order.
func keysOf(evs []store.InboundEvent) []string {
	keys := make([]string, len(evs))
	for i, ev := range evs {
		keys[i] = ev.IdempotencyKey
	}
	return keys
}

// echoKeys answers each event as stored, with its key as id.
func echoKeys(evs []store.InboundEvent) []store.EnqueueResult {
	out := make([]store.EnqueueResult, len(evs))
	for i, ev := range evs {
		out[i] = store.EnqueueResult{ID: ev.IdempotencyKey, Inserted: true}
	}
	return out
}

func (w *recordingWrite) write(ctx context.Context, evs []store.InboundEvent) ([]store.EnqueueResult, error) {
	keys := keysOf(evs)
	w.mu.Lock()
	w.calls = append(w.calls, keys)
	hold := w.hold
	w.mu.Unlock()
	if w.started != nil {
		w.started <- len(evs)
	}
	if hold != nil {
		<-hold
	}
	if w.poison != "" && slices.Contains(keys, w.poison) {
		return nil, errors.New("poisoned")
	}
	return echoKeys(evs), nil
}

func (w *recordingWrite) numCalls() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.calls)
}

func delivery(name string, n int) []store.InboundEvent {
	evs := make([]store.InboundEvent, n)
	for i := range evs {
		evs[i].IdempotencyKey = name + "-" + strconv.Itoa(i)
	}
	return evs
}

type writeOutcome struct {
	name string
	res  []store.EnqueueResult
	err  error
}

// TestGroupCommitWritesWaitingDeliveriesTogether: while one transaction runs,
// the deliveries that arrive wait and are written by one transaction, each
// getting back the results of its own events, in order.
func TestGroupCommitWritesWaitingDeliveriesTogether(t *testing.T) {
	w := &recordingWrite{hold: make(chan struct{}), started: make(chan int, 10)}
	g := &groupCommit{write: w.write, slots: 1, maxEvents: 1000, timeout: time.Minute}
	out := make(chan writeOutcome, 4)
	run := func(name string, n int) {
		go func() {
			res, err := g.enqueue(context.Background(), delivery(name, n))
			out <- writeOutcome{name, res, err}
		}()
	}
	run("first", 2)
	testwait.Recv(t, "the first delivery's transaction", w.started)
	for _, name := range []string{"a", "b", "c"} {
		run(name, 3)
	}
	testwait.For(t, "three deliveries waiting", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.queue) == 3
	})
	close(w.hold)
	for range 4 {
		o := testwait.Recv(t, "a delivery's outcome", out)
		if o.err != nil {
			t.Fatalf("%s: %v", o.name, o.err)
		}
		want := delivery(o.name, len(o.res))
		if len(o.res) == 0 || len(o.res) != map[bool]int{true: 2, false: 3}[o.name == "first"] {
			t.Fatalf("%s: %d results", o.name, len(o.res))
		}
		for i, r := range o.res {
			if r.ID != want[i].IdempotencyKey {
				t.Fatalf("%s: result %d is %s, want %s", o.name, i, r.ID, want[i].IdempotencyKey)
			}
		}
	}
	if n := w.numCalls(); n != 2 {
		t.Fatalf("%d transactions for 4 deliveries (1 running, 3 waiting), want 2: %v", n, w.calls)
	}
	if got := len(w.calls[1]); got != 9 {
		t.Fatalf("second transaction wrote %d events, want the 9 of the three waiting deliveries", got)
	}
}

// TestGroupCommitBoundsEventsPerTransaction: waiting deliveries are split so
// that no transaction takes more than maxEvents, except a single larger one.
func TestGroupCommitBoundsEventsPerTransaction(t *testing.T) {
	w := &recordingWrite{hold: make(chan struct{}), started: make(chan int, 10)}
	g := &groupCommit{write: w.write, slots: 1, maxEvents: 5, timeout: time.Minute}
	var wg sync.WaitGroup
	enqueue := func(name string, n int) {
		wg.Go(func() {
			if _, err := g.enqueue(context.Background(), delivery(name, n)); err != nil {
				t.Error(err)
			}
		})
	}
	enqueue("head", 1)
	testwait.Recv(t, "the first transaction", w.started)
	for i, n := range []int{3, 2, 4, 7} {
		enqueue(fmt.Sprint("d", i), n)
		testwait.For(t, "the delivery queued", func() bool {
			g.mu.Lock()
			defer g.mu.Unlock()
			return len(g.queue) == i+1
		})
	}
	close(w.hold)
	wg.Wait()
	var sizes []int
	for _, c := range w.calls {
		sizes = append(sizes, len(c))
	}
	if !slices.Equal(sizes, []int{1, 5, 4, 7}) {
		t.Fatalf("transaction sizes %v, want [1 5 4 7]: head alone, 3+2, 4, then 7 alone", sizes)
	}
}

// TestGroupCommitFailureFailsOnlyItsDelivery: when a group's transaction
// fails, each delivery is written alone, so only the bad one fails.
func TestGroupCommitFailureFailsOnlyItsDelivery(t *testing.T) {
	w := &recordingWrite{hold: make(chan struct{}), started: make(chan int, 10), poison: "bad-1"}
	g := &groupCommit{write: w.write, slots: 1, maxEvents: 1000, timeout: time.Minute}
	out := make(chan writeOutcome, 3)
	for _, name := range []string{"first", "good", "bad"} {
		go func() {
			res, err := g.enqueue(context.Background(), delivery(name, 2))
			out <- writeOutcome{name, res, err}
		}()
		if name == "first" {
			testwait.Recv(t, "the first transaction", w.started)
		}
	}
	testwait.For(t, "two deliveries waiting", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.queue) == 2
	})
	close(w.hold)
	for range 3 {
		o := testwait.Recv(t, "an outcome", out)
		if (o.err != nil) != (o.name == "bad") {
			t.Fatalf("%s: err %v", o.name, o.err)
		}
		if o.name == "good" && (len(o.res) != 2 || o.res[1].ID != "good-1") {
			t.Fatalf("good: %+v", o.res)
		}
	}
}

// TestGroupCommitAbandonedWaiterIsNotWritten: a delivery whose request ends
// while it waits leaves the queue unwritten (HubSpot will send it again),
// and the others are still written.
func TestGroupCommitAbandonedWaiterIsNotWritten(t *testing.T) {
	w := &recordingWrite{hold: make(chan struct{}), started: make(chan int, 10)}
	g := &groupCommit{write: w.write, slots: 1, maxEvents: 1000, timeout: time.Minute}
	first := make(chan error, 1)
	go func() {
		_, err := g.enqueue(context.Background(), delivery("first", 1))
		first <- err
	}()
	testwait.Recv(t, "the first transaction", w.started)
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		_, err := g.enqueue(ctx, delivery("gone", 1))
		gone <- err
	}()
	testwait.For(t, "the delivery queued", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.queue) == 1
	})
	cancel()
	if err := testwait.Recv(t, "the abandoned delivery", gone); !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned delivery: %v, want context.Canceled", err)
	}
	close(w.hold)
	if err := testwait.Recv(t, "the first delivery", first); err != nil {
		t.Fatal(err)
	}
	for _, c := range w.calls {
		if slices.Contains(c, "gone-0") {
			t.Fatalf("the abandoned delivery was written: %v", w.calls)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.active != 0 || len(g.queue) != 0 {
		t.Fatalf("after all: %d active, %d queued; want 0, 0", g.active, len(g.queue))
	}
}

// TestReceiverGroupCommitOnEachStore sends many deliveries at once, each
// twice (HubSpot's retry racing its original), through the receiver on each
// store: every event is stored once, and the deliveries' inserted counts add
// up to the events stored.
func TestReceiverGroupCommitOnEachStore(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setupDialect(t, d, store.RetryPolicy{})
		now := func() time.Time { return time.UnixMilli(t0 + 1e9) } // after deliveryBody's events
		rc, err := NewReceiver(ReceiverConfig{Store: b.store.Inbound(), ClientSecret: testSecret, PublicURL: testPublicURL, MaxConcurrentStores: 1, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		const deliveries, perDelivery = 12, 20
		bodies := make([][]byte, deliveries)
		for i := range bodies {
			bodies[i] = deliveryBody(t, perDelivery)
		}
		var mu sync.Mutex
		inserted := 0
		var wg sync.WaitGroup
		for _, body := range append(slices.Clone(bodies), bodies...) {
			wg.Go(func() {
				rec := httptest.NewRecorder()
				rc.ServeHTTP(rec, signedRequest(t, body, now()))
				if rec.Code != http.StatusOK {
					t.Errorf("status %d: %s", rec.Code, rec.Body)
					return
				}
				var resp receiveResponse
				if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				inserted += resp.Inserted
				mu.Unlock()
			})
		}
		wg.Wait()
		if n := b.count(t); n != deliveries*perDelivery || inserted != n {
			t.Fatalf("%d rows stored, deliveries report %d inserted; want %d and %d", n, inserted, deliveries*perDelivery, deliveries*perDelivery)
		}
	})
}

// TestGroupCommitDuplicateAcrossDeliveries: the same event in two deliveries
// written by one transaction (HubSpot's retry waiting behind its original) is
// stored once, on each store: one delivery reports it inserted, both get its id.
func TestGroupCommitDuplicateAcrossDeliveries(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setupDialect(t, d, store.RetryPolicy{})
		hold, started := make(chan struct{}), make(chan int, 4)
		first := true
		write := func(ctx context.Context, evs []store.InboundEvent) ([]store.EnqueueResult, error) {
			if first {
				first = false // only the leader's goroutine writes, one call at a time
				started <- len(evs)
				<-hold
			}
			return b.store.Inbound().EnqueueBatch(ctx, evs)
		}
		g := &groupCommit{write: write, slots: 1, maxEvents: 1000, timeout: time.Minute}
		mk := func(key string) store.InboundEvent {
			return store.InboundEvent{Source: "hubspot", ObjectType: "contacts", ExternalID: "7", EventType: store.EventUpdate,
				IdempotencyKey: key, Payload: json.RawMessage(`{}`)}
		}
		out := make(chan writeOutcome, 3)
		send := func(name string, evs ...store.InboundEvent) {
			go func() {
				res, err := g.enqueue(context.Background(), evs)
				out <- writeOutcome{name, res, err}
			}()
		}
		send("head", mk("k-head"))
		testwait.Recv(t, "the first transaction", started)
		send("original", mk("k-dup"), mk("k-other"))
		testwait.For(t, "the original queued", func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.queue) == 1 })
		send("retry", mk("k-dup"))
		testwait.For(t, "the retry queued", func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.queue) == 2 })
		close(hold)
		got := map[string][]store.EnqueueResult{}
		for range 3 {
			o := testwait.Recv(t, "an outcome", out)
			if o.err != nil {
				t.Fatalf("%s: %v", o.name, o.err)
			}
			got[o.name] = o.res
		}
		orig, retry := got["original"][0], got["retry"][0]
		if orig.ID == "" || orig.ID != retry.ID || orig.Inserted == retry.Inserted {
			t.Fatalf("duplicate key: original %+v, retry %+v; want one id, inserted once", orig, retry)
		}
		if n := b.count(t); n != 3 {
			t.Fatalf("%d rows, want 3", n)
		}
	})
}

// TestGroupCommitManyDeliveriesTwoSlots writes many concurrent deliveries,
// some abandoned, through two slots: every delivery not abandoned is written
// exactly once, and all slots are free at the end.
func TestGroupCommitManyDeliveriesTwoSlots(t *testing.T) {
	w := &recordingWrite{}
	g := &groupCommit{write: w.write, slots: 2, maxEvents: 7, timeout: time.Minute}
	var wg sync.WaitGroup
	var mu sync.Mutex
	written := map[string]int{}
	for i := range 200 {
		wg.Go(func() {
			ctx := context.Background()
			if i%10 == 3 {
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			}
			name := fmt.Sprint("d", i)
			res, err := g.enqueue(ctx, delivery(name, 1+i%4))
			if err != nil {
				return
			}
			mu.Lock()
			written[name] += len(res)
			mu.Unlock()
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for _, c := range w.calls {
		for _, k := range c {
			seen[k]++
		}
	}
	for i := range 200 {
		name := fmt.Sprint("d", i)
		if n, ok := written[name]; ok && n != 1+i%4 {
			t.Errorf("%s: %d results, want %d", name, n, 1+i%4)
		}
		for j := range 1 + i%4 {
			k := fmt.Sprintf("%s-%d", name, j)
			if _, ok := written[name]; ok && seen[k] != 1 {
				t.Errorf("%s written %d times, want once", k, seen[k])
			}
		}
	}
	if len(written) < 180 {
		t.Errorf("only %d of 200 deliveries written (20 abandoned at most)", len(written))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.active != 0 || len(g.queue) != 0 {
		t.Fatalf("after all: %d slots held, %d queued; want 0, 0", g.active, len(g.queue))
	}
}

// gatedWrite is a group commit write func whose calls each wait until the
// test opens the gate named by the call's first event's key.
type gatedWrite struct {
	mu      sync.Mutex
	calls   [][]string
	gates   map[string]chan struct{}
	started chan string
}

func (w *gatedWrite) gate(key string) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gates[key] == nil {
		w.gates[key] = make(chan struct{})
	}
	return w.gates[key]
}

func (w *gatedWrite) write(ctx context.Context, evs []store.InboundEvent) ([]store.EnqueueResult, error) {
	keys := keysOf(evs)
	w.mu.Lock()
	w.calls = append(w.calls, keys)
	w.mu.Unlock()
	w.started <- keys[0]
	<-w.gate(keys[0])
	return echoKeys(evs), nil
}

// deliveryOf returns a delivery of one event for each of records' contacts.
func deliveryOf(name string, records ...string) []store.InboundEvent {
	evs := delivery(name, len(records))
	for i, r := range records {
		evs[i].Source, evs[i].ObjectType, evs[i].ExternalID = SourceHubSpot, "contacts", r
	}
	return evs
}

// TestGroupCommitPassesOverSharedRecords: a transaction started while
// another runs passes over a waiting delivery that shares a record with the
// running one (it would wait on that record's sequence counter), and a later
// one that shares a record with the delivery passed over (so a record's
// waiting events keep their arrival order), and takes the others. A delivery
// passed over once is taken by the next transaction, although its record is
// still being written.
func TestGroupCommitPassesOverSharedRecords(t *testing.T) {
	type delivery struct {
		name    string
		records []string
	}
	for _, tc := range []struct {
		name      string
		maxEvents int
		queued    []delivery // waiting, in arrival order, while a (x, p) and z are written
		want      [][]string // the transactions after a's and z's, in order
	}{
		{
			// b shares x with a: passed over; c is taken; d does not fit. Then
			// b, passed over once already, goes before d.
			name: "once", maxEvents: 1,
			queued: []delivery{{"b", []string{"q", "x"}}, {"c", []string{"y"}}, {"d", []string{"w"}}},
			want:   [][]string{{"c-0"}, {"b-0", "b-1"}, {"d-0"}},
		},
		{
			// e shares no record with a, but q with b, passed over before it.
			name: "order", maxEvents: 1000,
			queued: []delivery{{"b", []string{"q", "x"}}, {"e", []string{"q"}}, {"c", []string{"y"}}},
			want:   [][]string{{"c-0"}, {"b-0", "b-1", "e-0"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &gatedWrite{gates: map[string]chan struct{}{}, started: make(chan string, 10)}
			g := &groupCommit{write: w.write, slots: 2, maxEvents: tc.maxEvents, timeout: time.Minute}
			var wg sync.WaitGroup
			enqueue := func(name string, records ...string) {
				wg.Go(func() {
					if _, err := g.enqueue(context.Background(), deliveryOf(name, records...)); err != nil {
						t.Error(err)
					}
				})
			}
			enqueue("a", "x", "p")
			if k := testwait.Recv(t, "a's transaction", w.started); k != "a-0" {
				t.Fatalf("first transaction starts with %s, want a-0", k)
			}
			enqueue("z", "z")
			if k := testwait.Recv(t, "z's transaction", w.started); k != "z-0" {
				t.Fatalf("second transaction starts with %s, want z-0", k)
			}
			// Both slots are busy: the others wait, in order.
			for i, d := range tc.queued {
				enqueue(d.name, d.records...)
				testwait.For(t, d.name+" queued", func() bool {
					g.mu.Lock()
					defer g.mu.Unlock()
					return len(g.queue) == i+1
				})
			}
			close(w.gate("z-0"))
			// a is still being written while the others go.
			for _, c := range tc.want {
				if k := testwait.Recv(t, "a transaction", w.started); k != c[0] {
					t.Fatalf("a transaction starts with %s, want %s (transactions after a and z: %v)", k, c[0], tc.want)
				}
				close(w.gate(c[0]))
			}
			close(w.gate("a-0"))
			wg.Wait()
			want := append([][]string{{"a-0", "a-1"}, {"z-0"}}, tc.want...)
			if !slices.EqualFunc(w.calls, want, slices.Equal) {
				t.Fatalf("transactions %v, want %v", w.calls, want)
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.active != 0 || len(g.queue) != 0 || len(g.writing) != 0 {
				t.Fatalf("after all: %d slots held, %d queued, %d records being written; want 0, 0, 0", g.active, len(g.queue), len(g.writing))
			}
		})
	}
}
