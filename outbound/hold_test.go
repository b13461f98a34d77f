package outbound_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/outbound"
)

// TestHoldFillsCalls: while the budget is short (it refused one of the
// worker's cycles within HoldFor), a cycle makes a call filled at least half
// at once, but holds a call filled below half whose records were claimed for
// the first time: they wait for the next tick, and are sent then with what
// arrived meanwhile, in one call. Without Hold, the same companies take a
// call each time a cycle claims some.
func TestHoldFillsCalls(t *testing.T) {
	t.Parallel()
	for _, hold := range []bool{true, false} {
		t.Run(fmt.Sprintf("hold=%v", hold), func(t *testing.T) {
			t.Parallel()
			b := setup(t, options{})
			ctx := context.Background()
			hs := &callSizes{HubSpot: b.client, sizes: map[string][]int{}}
			w := b.worker(t, func(c *outbound.Config) {
				c.Budget = &refuseOnce{Budget: b.budget}
				c.HubSpot = hs
				c.Hold = outbound.HoldDefault
				if !hold {
					c.Hold = -1
				}
			})
			wl := newWorkload(b, 11)
			run := func(step string) outbound.Summary {
				t.Helper()
				s, err := w.RunOnce(ctx)
				if err != nil {
					t.Fatalf("%s: %v", step, err)
				}
				t.Logf("%s: %+v", step, s)
				return s
			}
			companies := func() []int {
				var sizes []int
				for kind, n := range hs.sizes {
					if strings.HasPrefix(kind, "companies ") {
						sizes = append(sizes, n...)
					}
				}
				slices.Sort(sizes)
				return sizes
			}

			wl.insert(t, "contacts", map[string]any{"email": "first@example.com"})
			if s := run("refused"); s.BudgetRetryAfter <= 0 {
				t.Fatalf("first cycle = %+v; want refused by the budget", s)
			}
			b.clock.Advance(time.Second) // past the refusal's wait, within HoldFor

			for i := range 60 {
				wl.insert(t, "contacts", map[string]any{"email": fmt.Sprintf("c%d@example.com", i)})
			}
			for i := range 5 {
				wl.insert(t, "companies", map[string]any{"name": fmt.Sprint("A", i)})
			}
			s := run("60 contacts and 5 companies")
			if got := hs.sizes["contacts upsert"]; !slices.Equal(got, []int{61}) {
				t.Fatalf("contact calls of %v records; want one of 61 (over half a call: never held)", got)
			}
			wantHeld, wantCalls := 0, []int{5}
			if hold {
				wantHeld, wantCalls = 5, nil
			}
			if got := companies(); s.Held != wantHeld || !slices.Equal(got, wantCalls) {
				t.Fatalf("held %d events, company calls %v; want %d held, calls %v", s.Held, got, wantHeld, wantCalls)
			}

			for i := range 5 {
				wl.insert(t, "companies", map[string]any{"name": fmt.Sprint("B", i)})
			}
			s = run("5 more companies")
			if hold && (s.Claimed != 5 || s.Held != 5) {
				t.Fatalf("claimed %d, held %d; want only the 5 new companies claimed (the held ones wait for the tick), and held", s.Claimed, s.Held)
			}

			// Past the tick, the held records are claimed again with what
			// arrived meanwhile (nothing here), and go: a record is held once.
			b.clock.Advance(outbound.HoldDefault)
			s = run("after the tick")
			want := []int{5, 5}
			if hold {
				want = []int{10}
			}
			if got := companies(); !slices.Equal(got, want) {
				t.Fatalf("company calls of %v records; want %v", got, want)
			}
			if m := w.Metrics().Snapshot(); m.Held != int64(2*wantHeld) {
				t.Errorf("Metrics Held = %d; want %d", m.Held, 2*wantHeld)
			}
			b.drain(t, b.worker(t, nil))
			b.verify(t, "contacts")
			b.verify(t, "companies")
		})
	}
}

// TestHoldingLoopWaitsForTheTick: after a cycle that found no backlog, a loop
// of a worker that holds waits for the next multiple of Hold plus at most
// half of Hold, and Notify does not cut that short; a backlog is claimed at
// once. Before the budget refused, and HoldFor after it, a loop goes on at
// once.
func TestHoldingLoopWaitsForTheTick(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	hold := 2 * time.Second
	w := b.worker(t, func(c *outbound.Config) {
		c.Budget = &refuseOnce{Budget: b.budget}
		c.Hold = hold
		c.BatchSize = 1
	})
	some := outbound.Summary{Claimed: 1}
	if wait, _ := outbound.Pause(w, some); wait != 0 {
		t.Fatalf("before any refusal, a loop waits %s after a cycle that claimed; want 0", wait)
	}
	wl := newWorkload(b, 12)
	wl.insert(t, "contacts", map[string]any{"email": "first@example.com"})
	if s, err := w.RunOnce(context.Background()); err != nil || s.BudgetRetryAfter <= 0 {
		t.Fatalf("first cycle = %+v, %v; want refused by the budget", s, err)
	}
	b.clock.Advance(time.Second)

	now := b.clock.Now()
	toTick := now.Truncate(hold).Add(hold).Sub(now)
	for range 20 {
		wait, notified := outbound.Pause(w, some)
		if notified || wait < toTick || wait > toTick+hold/2 {
			t.Fatalf("holding, a loop waits %s (Notify cuts it short: %v); want %s to %s, not cut short", wait, notified, toTick, toTick+hold/2)
		}
	}
	if wait, _ := outbound.Pause(w, outbound.Summary{}); wait <= 0 {
		t.Fatalf("holding, a loop that claimed nothing waits %s; want the tick", wait)
	}

	// Holding, a cycle claims FillClaimsMax × BatchSize events at once; a
	// claim that comes back full says more is claimable. With the first
	// record (released by the refusal), 11 are pending.
	for i := range outbound.FillClaimsMax {
		wl.insert(t, "contacts", map[string]any{"email": fmt.Sprintf("c%d@example.com", i)})
	}
	s, err := w.RunOnce(context.Background())
	if err != nil || s.Claimed != outbound.FillClaimsMax || !s.Backlog {
		t.Fatalf("cycle = %+v, %v; want %d events claimed at once (BatchSize 1), and Backlog", s, err, outbound.FillClaimsMax)
	}
	if wait, _ := outbound.Pause(w, s); wait != 0 {
		t.Fatalf("holding, a loop waits %s after a full claim; want 0 (a backlog is claimed at once)", wait)
	}
	if s, err = w.RunOnce(context.Background()); err != nil || s.Claimed != 1 || s.Backlog {
		t.Fatalf("cycle with one event left = %+v, %v; want it claimed, no Backlog", s, err)
	}

	b.clock.Advance(outbound.HoldFor)
	if wait, _ := outbound.Pause(w, some); wait != 0 {
		t.Fatalf("HoldFor after the refusal, a loop waits %s; want 0", wait)
	}
}

// TestBookedCallStartsHolding: a budget that books a call ahead (no room at
// once, room within BudgetAhead) is short too, although it refused nothing:
// the worker then holds.
func TestBookedCallStartsHolding(t *testing.T) {
	t.Parallel()
	b := setup(t, options{budgetLimit: 1})
	w := b.worker(t, func(c *outbound.Config) { c.Hold = 2 * time.Second })
	wl := newWorkload(b, 13)
	some := outbound.Summary{Claimed: 1}

	wl.insert(t, "contacts", map[string]any{"email": "first@example.com"})
	if s, err := w.RunOnce(context.Background()); err != nil || s.Calls != 1 {
		t.Fatalf("first cycle = %+v, %v; want one call, granted at once", s, err)
	}
	if wait, _ := outbound.Pause(w, some); wait != 0 {
		t.Fatalf("after a call granted at once, a loop waits %s; want 0", wait)
	}

	// The window's one call frees its room 10 s after it was answered: a
	// call 9.5 s later is booked for then.
	b.clock.Advance(9500 * time.Millisecond)
	wl.insert(t, "contacts", map[string]any{"email": "second@example.com"})
	if s, err := w.RunOnce(context.Background()); err != nil || s.Calls != 1 {
		t.Fatalf("second cycle = %+v, %v; want one call, booked ahead", s, err)
	}
	if m := w.Metrics().Snapshot(); m.BudgetBooked != 1 || m.BudgetDenied != 0 {
		t.Fatalf("budget booked %d calls and refused %d; want 1 booked, none refused", m.BudgetBooked, m.BudgetDenied)
	}
	if wait, notified := outbound.Pause(w, some); wait <= 0 || notified {
		t.Fatalf("after a booked call, a loop waits %s (Notify cuts it short: %v); want the tick, not cut short", wait, notified)
	}
}

// sharedBudget is a budget.SQL of 100 calls per window on b's database, as
// the replicas of one deployment share it, on b's clock.
func sharedBudget(t *testing.T, b *bundle) *budget.SQL {
	t.Helper()
	shared, err := budget.NewSQL(b.db.DB, b.db.Dialect, budget.Config{Limit: 100, DailyLimit: -1, Now: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return shared
}

// othersCall reserves n calls in the shared budget, as other replicas'
// calls would, and fails the test unless they are granted.
func othersCall(t *testing.T, shared *budget.SQL, n int) {
	t.Helper()
	if r, err := shared.Reserve(context.Background(), budgetKey, n); err != nil || !r.Granted {
		t.Fatalf("other replicas' Reserve(%d) = %+v, %v; want granted", n, r, err)
	}
}

// holdingWorker is a worker of b on the shared budget, with Hold on.
func holdingWorker(t *testing.T, b *bundle, shared *budget.SQL) *outbound.Worker {
	t.Helper()
	return b.worker(t, func(c *outbound.Config) {
		c.Budget = shared
		c.Hold = 2 * time.Second
	})
}

// TestQuarterFullWindowStartsHolding: with a budget that can tell how full
// its window is (budget.SQL), a worker holds once the window holds a quarter
// of its limit, whoever made the calls (another replica's, here), although its
// own calls were never refused nor booked; and a replica that starts later
// holds at once, although the window has emptied.
func TestQuarterFullWindowStartsHolding(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	shared := sharedBudget(t, b)
	w := holdingWorker(t, b, shared)
	some := outbound.Summary{Claimed: 1}

	othersCall(t, shared, 24)
	if _, err := w.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if wait, _ := outbound.Pause(w, some); wait != 0 {
		t.Fatalf("with 24 of 100 calls in the window, a loop waits %s; want 0", wait)
	}
	othersCall(t, shared, 1)
	b.clock.Advance(time.Second) // the worker reads the window once a second
	if _, err := w.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if wait, notified := outbound.Pause(w, some); wait <= 0 || notified {
		t.Fatalf("with 25 of 100 calls in the window, a loop waits %s (Notify cuts it short: %v); want the tick, not cut short", wait, notified)
	}

	// A replica that starts a window later, with the window empty, holds
	// too: the first worker recorded in the budget that it holds.
	b.clock.Advance(11 * time.Second)
	restarted := holdingWorker(t, b, shared)
	if _, err := restarted.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if wait, notified := outbound.Pause(restarted, some); wait <= 0 || notified {
		t.Fatalf("a replica started after another began to hold, with the window empty, waits %s (Notify cuts it short: %v); want the tick", wait, notified)
	}
}

// TestPeersShortStartsHolding: a worker holds when the shared budget was
// short for another replica within HoldFor (budget.WindowUse.ShortAt), although
// the window is empty by now and its own calls were never refused: a replica
// that restarts holds as its peers do. It stops HoldFor after that instant.
func TestPeersShortStartsHolding(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	shared := sharedBudget(t, b)
	w := holdingWorker(t, b, shared)
	some := outbound.Summary{Claimed: 1}
	runOnce := func() {
		t.Helper()
		if _, err := w.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// Another replica fills the window; a window later it is empty again.
	othersCall(t, shared, 100)
	b.clock.Advance(11 * time.Second)
	runOnce()
	if wait, _ := outbound.Pause(w, some); wait != 0 {
		t.Fatalf("after a full window that refused no one, a loop waits %s; want 0", wait)
	}

	// This time the window refuses the other replica.
	othersCall(t, shared, 100)
	if r, err := shared.Reserve(ctx, budgetKey, 1); err != nil || r.Granted {
		t.Fatalf("another replica's Reserve(1) in a full window = %+v, %v; want refused", r, err)
	}
	b.clock.Advance(11 * time.Second)
	runOnce()
	if wait, notified := outbound.Pause(w, some); wait <= 0 || notified {
		t.Fatalf("after the budget refused another replica, a loop waits %s (Notify cuts it short: %v); want the tick, not cut short", wait, notified)
	}

	b.clock.Advance(outbound.HoldFor - 10*time.Second) // HoldFor and a second after the refusal
	runOnce()
	if wait, _ := outbound.Pause(w, some); wait != 0 {
		t.Fatalf("HoldFor after the other replica's refusal, a loop waits %s; want 0", wait)
	}
}

// TestHoldGoesOnWhileTheFlowFillsAnEighth: a holding worker's hold does not
// run out HoldFor after the budget was short while its held calls still fill
// an eighth of the window: in the second half of its hold it renews it, in the
// budget too, so that a replica that starts later holds as well. When the
// window holds less than an eighth, the hold runs out.
func TestHoldGoesOnWhileTheFlowFillsAnEighth(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	shared := sharedBudget(t, b)
	w := holdingWorker(t, b, shared)
	some := outbound.Summary{Claimed: 1}
	holds := func(who *outbound.Worker) bool {
		t.Helper()
		if _, err := who.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		wait, notified := outbound.Pause(who, some)
		return wait > 0 && !notified
	}

	othersCall(t, shared, 25) // a quarter: the worker holds, and notes it in the budget
	if !holds(w) {
		t.Fatal("with 25 of 100 calls in the window, the worker does not hold")
	}
	// The held calls fill 13 of 100 in each window from now on. Step a
	// window at a time (a grant counts for 10.3 s) through two holds' length.
	const step = 11 * time.Second
	for elapsed := step; elapsed <= 2*outbound.HoldFor; elapsed += step {
		b.clock.Advance(step)
		othersCall(t, shared, 13)
		if !holds(w) {
			t.Fatalf("%s after the hold began, with 13 of 100 calls in each window, the worker no longer holds", elapsed)
		}
	}
	// A replica that starts now, with the window at 13, holds at once: the
	// renewal is in the budget.
	if !holds(holdingWorker(t, b, shared)) {
		t.Fatal("a replica started two holds' length after the window was a quarter full does not hold; want it to, as its renewing peer does")
	}

	// Now the held calls fill 12 of 100: the hold runs out HoldFor after its
	// last renewal, at most.
	var stopped bool
	for elapsed := step; elapsed <= outbound.HoldFor+step; elapsed += step {
		b.clock.Advance(step)
		othersCall(t, shared, 12)
		if !holds(w) {
			stopped = true
			break
		}
	}
	if !stopped {
		t.Fatal("with 12 of 100 calls in each window, the worker still holds HoldFor later; want the hold to run out")
	}
}
