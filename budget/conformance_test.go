package budget

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeClock is an injected clock the tests advance by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

// clockStart is a bucket-aligned moment well inside a UTC day.
var clockStart = time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)

func newClock() *fakeClock { return &fakeClock{t: clockStart} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// replicasFunc returns two budgets sharing state (for the memory budget, the
// same one twice) built from cfg.
type replicasFunc func(t *testing.T, cfg Config) (Budget, Budget)

// exercise is the conformance suite every Budget implementation must pass.
func exercise(t *testing.T, newPaced replicasFunc, hammerPhases int) {
	ctx := context.Background()
	// The cases that check exact waits run without CallLead and RetrySpread
	// (unless they set them); the pacing cases below use the defaults.
	newReplicas := func(t *testing.T, cfg Config) (Budget, Budget) {
		cfg.CallLead = cmp.Or(cfg.CallLead, -1)
		cfg.RetrySpread = cmp.Or(cfg.RetrySpread, -1)
		return newPaced(t, cfg)
	}

	mustReserve := func(t *testing.T, b Budget, key string, tokens int) Reservation {
		t.Helper()
		r, err := b.Reserve(ctx, key, tokens)
		if err != nil {
			t.Fatalf("Reserve(%q, %d): %v", key, tokens, err)
		}
		return r
	}
	wantGranted := func(t *testing.T, b Budget, key string, tokens int) {
		t.Helper()
		if r := mustReserve(t, b, key, tokens); !r.Granted {
			t.Fatalf("Reserve(%q, %d) refused (RetryAfter %s); want granted", key, tokens, r.RetryAfter)
		}
	}
	wantRefused := func(t *testing.T, b Budget, key string, tokens int) time.Duration {
		t.Helper()
		r := mustReserve(t, b, key, tokens)
		if r.Granted {
			t.Fatalf("Reserve(%q, %d) granted; want refused", key, tokens)
		}
		if r.RetryAfter <= 0 {
			t.Fatalf("Reserve(%q, %d) refused with RetryAfter %s; want > 0", key, tokens, r.RetryAfter)
		}
		return r.RetryAfter
	}

	t.Run("CallsStartedByUseByStayInTheirWindow", func(t *testing.T) {
		t.Parallel()
		// Calls made as late as their grant allows (at UseBy) must still fit
		// HubSpot's rolling window, counted when they are made: a cycle that
		// reserved and then called late cannot spill into a window the budget
		// no longer counts.
		clock := newClock()
		const limit, window, lead = 20, time.Second, 200 * time.Millisecond
		a, b := newPaced(t, Config{Limit: limit, Window: window, DailyLimit: -1, CallLead: lead, Now: clock.Now})
		rng := rand.New(rand.NewPCG(3, 4))
		var calls [][2]int64
		granted := 0
		for i := range 400 {
			tokens := 1 + rng.IntN(3)
			now := clock.Now()
			r := mustReserve(t, []Budget{a, b}[i%2], "paced", tokens)
			if r.Granted {
				granted += tokens
				if r.UseBy.Before(now.Add(lead)) {
					t.Fatalf("grant at %s: UseBy %s, less than CallLead %s later", now.Sub(clockStart), r.UseBy.Sub(clockStart), lead)
				}
				calls = append(calls, [2]int64{r.UseBy.UnixMicro(), int64(tokens)})
			}
			clock.Advance(time.Duration(rng.Int64N(int64(40 * time.Millisecond))))
		}
		if granted < limit*5 {
			t.Fatalf("granted %d tokens over %s; the test needs the budget saturated", granted, clock.Now().Sub(clockStart))
		}
		checkWindows(t, calls, window, limit)
	})

	mustSchedule := func(t *testing.T, b Budget, key string, tokens int, within time.Duration) Reservation {
		t.Helper()
		sb, ok := b.(Scheduler)
		if !ok {
			t.Fatalf("%T is not a Scheduler", b)
		}
		r, err := sb.Schedule(ctx, key, tokens, within)
		if err != nil {
			t.Fatalf("Schedule(%q, %d, %s): %v", key, tokens, within, err)
		}
		return r
	}

	t.Run("BookedCallsStayInTheirWindow", func(t *testing.T) {
		t.Parallel()
		// Grants for now and grants booked ahead, mixed, on two replicas: calls
		// made at any moment their grant allows, from At (or the grant) to
		// UseBy, must fit HubSpot's rolling window.
		clock := newClock()
		const limit, window, lead = 20, time.Second, 200 * time.Millisecond
		a, b := newPaced(t, Config{Limit: limit, Window: window, DailyLimit: -1, CallLead: lead, Now: clock.Now})
		rng := rand.New(rand.NewPCG(5, 6))
		var calls [][2]int64
		granted, booked := 0, 0
		for i := range 600 {
			tokens := 1 + rng.IntN(3)
			now := clock.Now()
			within := time.Duration(rng.Int64N(int64(2 * window))) // beyond a window is capped
			if i%3 == 0 {
				within = 0
			}
			r := mustSchedule(t, []Budget{a, b}[i%2], "booked", tokens, within)
			if !r.Granted {
				if r.RetryAfter <= min(within, window) {
					t.Fatalf("refused with RetryAfter %s, within the %s asked for", r.RetryAfter, min(within, window))
				}
				clock.Advance(time.Duration(rng.Int64N(int64(40 * time.Millisecond))))
				continue
			}
			granted += tokens
			from := now
			if r.Wait != 0 {
				booked++
				if r.Wait < 0 || r.Wait > min(within, window) {
					t.Fatalf("booked at %s for %s later, asked within %s", now.Sub(clockStart), r.Wait, within)
				}
				from = now.Add(r.Wait)
			}
			if r.UseBy.Before(from.Add(lead)) {
				t.Fatalf("grant from %s: UseBy %s, less than CallLead %s later", from.Sub(clockStart), r.UseBy.Sub(clockStart), lead)
			}
			// The call starts at the first or the last moment allowed, or between.
			at := []time.Time{from, r.UseBy, from.Add(time.Duration(rng.Int64N(int64(r.UseBy.Sub(from)) + 1)))}[rng.IntN(3)]
			calls = append(calls, [2]int64{at.UnixMicro(), int64(tokens)})
			clock.Advance(time.Duration(rng.Int64N(int64(40 * time.Millisecond))))
		}
		if booked < 50 || granted < limit*5 {
			t.Fatalf("granted %d tokens, %d grants booked ahead, over %s; the test needs the budget saturated and booked", granted, booked, clock.Now().Sub(clockStart))
		}
		checkWindows(t, calls, window, limit)
	})

	answer := func(t *testing.T, b Budget, key string, g Reservation) {
		t.Helper()
		if err := b.Observe(ctx, key, Observation{Grant: g}); err != nil {
			t.Fatalf("Observe(%q, answer): %v", key, err)
		}
	}

	t.Run("AnsweredCallFreesItsRoomSooner", func(t *testing.T) {
		t.Parallel()
		// A grant is counted for Window + CallLead from its bucket; a call
		// answered at once is counted from its answer instead: Window plus one
		// bucket. Five calls answered 50 ms after their grant free their room
		// at 10.1 s, the unanswered ones at 10.3 s.
		clock := newClock()
		const window = 10 * time.Second
		a, b := newPaced(t, Config{Limit: 5, Window: window, DailyLimit: -1, RetrySpread: -1, Now: clock.Now})
		g := mustReserve(t, a, "answered", 5)
		mustReserve(t, a, "unanswered", 5)
		clock.Advance(50 * time.Millisecond)
		for range 5 {
			answer(t, b, "answered", g)
		}
		answer(t, b, "answered", g) // a sixth answer of the 5-call grant moves nothing more
		clock.Advance(window + 50*time.Millisecond - time.Microsecond)
		wantRefused(t, a, "answered", 1)
		clock.Advance(time.Microsecond)
		wantGranted(t, a, "answered", 4)
		wantRefused(t, a, "answered", 2) // one left in the answered bucket
		if r := wantRefused(t, b, "unanswered", 1); r != 200*time.Millisecond {
			t.Fatalf("unanswered grant: RetryAfter %s at 10.1 s; want 200ms (counted for Window + CallLead)", r)
		}
	})

	t.Run("LateAnswerKeepsTheCallCounted", func(t *testing.T) {
		t.Parallel()
		// A call answered 3 s after its grant may have reached HubSpot 3 s
		// late, well after its UseBy: it stays counted until 3 s + Window
		// (plus a bucket), not the grant's 10.3 s.
		clock := newClock()
		const window = 10 * time.Second
		a, b := newPaced(t, Config{Limit: 5, Window: window, DailyLimit: -1, RetrySpread: -1, Now: clock.Now})
		g := mustReserve(t, a, "late", 5)
		clock.Advance(3 * time.Second)
		answer(t, b, "late", g)
		clock.Advance(window + 300*time.Millisecond - 3*time.Second)
		wantGranted(t, a, "late", 4)
		if r := wantRefused(t, a, "late", 1); r != 3*time.Second-200*time.Millisecond {
			t.Fatalf("RetryAfter %s at 10.3 s; want 2.8s (the late call leaves at 13.1 s)", r)
		}
	})

	t.Run("AnsweredCallsStayInTheirWindow", func(t *testing.T) {
		t.Parallel()
		// Calls start at any moment their grant allows and reach HubSpot at
		// any moment until their answer, sometimes well after their UseBy;
		// each is observed with its grant when answered. Counted at arrival,
		// no rolling window may hold more than the limit. Calls are answered
		// at most 0.5 s after they start and grants booked at most 0.4 s
		// ahead, so each call is answered before its grant's room (0.02 s
		// after a 1 s window) can be booked again: the condition under which
		// a late call is counted in time.
		clock := newClock()
		const limit, window, lead = 20, time.Second, 20 * time.Millisecond
		a, b := newPaced(t, Config{Limit: limit, Window: window, DailyLimit: -1, CallLead: lead, Now: clock.Now})
		rng := rand.New(rand.NewPCG(7, 8))
		type pending struct {
			at    time.Time
			grant Reservation
		}
		var answers []pending
		var calls [][2]int64
		granted, moved := 0, 0
		for i := range 800 {
			now := clock.Now()
			slices.SortFunc(answers, func(x, y pending) int { return x.at.Compare(y.at) })
			for len(answers) > 0 && !answers[0].at.After(now) {
				answer(t, []Budget{a, b}[i%2], "answered", answers[0].grant)
				answers = answers[1:]
			}
			tokens := 1 + rng.IntN(3)
			within := time.Duration(rng.Int64N(int64(400 * time.Millisecond)))
			if i%3 == 0 {
				within = 0
			}
			r := mustSchedule(t, []Budget{a, b}[i%2], "answered", tokens, within)
			if r.Granted {
				granted += tokens
				from := now.Add(r.Wait)
				for range tokens {
					// Starts between its grant and UseBy; answered up to 0.5 s
					// later; reached HubSpot at a moment in between, often
					// the last.
					start := from.Add(time.Duration(rng.Int64N(int64(r.UseBy.Sub(from)) + 1)))
					ans := start.Add(time.Duration(rng.Int64N(int64(500 * time.Millisecond))))
					arrival := ans
					if rng.IntN(2) == 0 {
						arrival = start.Add(time.Duration(rng.Int64N(int64(ans.Sub(start)) + 1)))
					}
					if arrival.After(r.UseBy) {
						moved++
					}
					calls = append(calls, [2]int64{arrival.UnixMicro(), 1})
					answers = append(answers, pending{ans, r})
				}
			}
			clock.Advance(time.Duration(rng.Int64N(int64(20 * time.Millisecond))))
		}
		if granted < limit*6 || moved < 50 {
			t.Fatalf("granted %d tokens, %d calls reached HubSpot after their UseBy, over %s; the test needs the budget saturated and late calls", granted, moved, clock.Now().Sub(clockStart))
		}
		checkWindows(t, calls, window, limit)
	})

	t.Run("BookingQueuesForFreedRoom", func(t *testing.T) {
		t.Parallel()
		clock := newClock()
		const window = 10 * time.Second
		bucket := window / bucketsPerWindow
		a, b := newReplicas(t, Config{Limit: 5, Window: window, DailyLimit: -1, Pace: 2, Now: clock.Now})
		wantGranted(t, a, "q", 5) // Reserve is not paced
		clock.Advance(time.Second)
		// The 5 calls of 0 s leave the window at 10 s (plus a bucket): the room
		// they free is booked, in turn, by whoever asks first, paced: with
		// Pace 2, a 1% slice of the window takes at most 2*5/100, rounded up,
		// so 1 booked call.
		slice := window / 100
		for i := range 5 {
			r := mustSchedule(t, []Budget{a, b}[i%2], "q", 1, window)
			if !r.Granted || r.Wait == 0 {
				t.Fatalf("Schedule %d = %+v; want booked ahead", i, r)
			}
			lo := window + time.Duration(i)*slice
			if at := clock.Now().Add(r.Wait).Sub(clockStart); at < lo || at > lo+bucket {
				t.Fatalf("Schedule %d booked for %s; want the room the first calls free, one slice each: %s to %s", i, at, lo, lo+bucket)
			}
		}
		// The room is taken: a sixth caller must wait until the booked calls
		// leave in turn, ten seconds after them.
		r := mustSchedule(t, b, "q", 1, window)
		if r.Granted {
			t.Fatalf("sixth Schedule = %+v; want refused", r)
		}
		if r.RetryAfter < 2*window-time.Second || r.RetryAfter > 2*window-time.Second+2*bucket {
			t.Fatalf("sixth Schedule RetryAfter = %s; want about %s", r.RetryAfter, 2*window-time.Second)
		}
		clock.Advance(window)
		wantRefused(t, a, "q", 1) // past the booked instant, its room is still theirs
		if r := mustSchedule(t, a, "q", 1, 0); r.Granted {
			t.Fatalf("Schedule within 0 = %+v; want refused like Reserve", r)
		}
	})

	t.Run("BookedFullOnlyWhenTheWindowIs", func(t *testing.T) {
		t.Parallel()
		// Pacing books a burst's third call into the next slice although the
		// window has room: not Full. A call booked because the window holds
		// its limit is.
		clock := newClock()
		a, b := newReplicas(t, Config{Limit: 100, Window: 10 * time.Second, DailyLimit: -1, Pace: 2, Now: clock.Now})
		for i := range 2 {
			if r := mustSchedule(t, a, "full", 1, time.Second); !r.Granted || r.Wait != 0 || r.Full {
				t.Fatalf("Schedule %d into an empty window = %+v; want granted at once", i, r)
			}
		}
		if r := mustSchedule(t, b, "full", 1, time.Second); !r.Granted || r.Wait == 0 || r.Full {
			t.Fatalf("third Schedule of a slice = %+v; want booked into the next slice by pacing, not Full", r)
		}
		wantGranted(t, a, "full", 97) // Reserve is not paced: the window holds its limit
		clock.Advance(time.Second)    // its room frees 9.1 s from now
		if r := mustSchedule(t, b, "full", 1, 10*time.Second); !r.Granted || r.Wait == 0 || !r.Full {
			t.Fatalf("Schedule into a full window = %+v; want booked ahead, Full", r)
		}
	})

	t.Run("BookingWaitsOutAPause", func(t *testing.T) {
		t.Parallel()
		clock := newClock()
		a, b := newReplicas(t, Config{Limit: 100, Window: 10 * time.Second, DailyLimit: -1, Now: clock.Now})
		if err := a.Observe(ctx, "p", Observation{RateLimited: true, Policy: PolicyTenSecondlyRolling, RetryAfter: 12 * time.Second}); err != nil {
			t.Fatal(err)
		}
		if r := mustSchedule(t, b, "p", 1, 5*time.Second); r.Granted || r.RetryAfter != 12*time.Second {
			t.Fatalf("Schedule during a 12 s pause, within 5 s = %+v; want refused for 12s", r)
		}
		clock.Advance(8 * time.Second)
		r := mustSchedule(t, b, "p", 1, 5*time.Second)
		if !r.Granted || r.Wait != 4*time.Second {
			t.Fatalf("Schedule 4 s before the pause ends = %+v; want booked for its end, 4s later", r)
		}
	})

	t.Run("RefusalsWakeApart", func(t *testing.T) {
		t.Parallel()
		clock := newClock()
		const limit, window, spread = 5, 10 * time.Second, 500 * time.Millisecond
		a, b := newPaced(t, Config{Limit: limit, Window: window, DailyLimit: -1, CallLead: -1, RetrySpread: spread, Now: clock.Now})
		wantGranted(t, a, "spread", limit)
		// Refused together, the replicas' cycles get waits that are never
		// shorter than the window's and spread over RetrySpread.
		seen := map[time.Duration]bool{}
		bucket := window / bucketsPerWindow
		for i := range 20 {
			wait := wantRefused(t, []Budget{a, b}[i%2], "spread", 1)
			if wait < window || wait >= window+bucket+spread {
				t.Fatalf("RetryAfter = %s; want in [%s, %s)", wait, window, window+bucket+spread)
			}
			seen[wait] = true
		}
		if len(seen) < 10 {
			t.Fatalf("20 refusals at one instant got only %d distinct RetryAfter values; want them spread", len(seen))
		}
	})

	t.Run("NeverExceedsLimitUnderConcurrency", func(t *testing.T) {
		t.Parallel()
		clock := newClock()
		const limit, window = 20, time.Second
		a, b := newReplicas(t, Config{Limit: limit, Window: window, DailyLimit: -1, Now: clock.Now})
		replicas := []Budget{a, b}
		type phase struct {
			at      time.Time
			granted int
		}
		var phases []phase
		rng := rand.New(rand.NewPCG(1, 2))
		for range hammerPhases {
			// 20 goroutines hammer at one clock reading; the clock moves between
			// phases by a random, unaligned step, so every grant's time is known.
			var (
				mu      sync.Mutex
				granted int
				wg      sync.WaitGroup
				errs    = make(chan error, 20)
			)
			for g := range 20 {
				seed := rng.Uint64()
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, uint64(g)))
					for range 2 {
						tokens := 1 + r.IntN(5)
						res, err := replicas[g%2].Reserve(ctx, "hammer", tokens)
						if err != nil {
							errs <- err
							return
						}
						if res.Granted {
							mu.Lock()
							granted += tokens
							mu.Unlock()
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			phases = append(phases, phase{clock.Now(), granted})
			clock.Advance(time.Duration(rng.Int64N(int64(250 * time.Millisecond))))
		}
		total := 0
		for i, p := range phases {
			total += p.granted
			inWindow := 0 // granted in (p.at-window, p.at]
			for _, q := range phases[:i+1] {
				if q.at.After(p.at.Add(-window)) {
					inWindow += q.granted
				}
			}
			if inWindow > limit {
				t.Fatalf("granted %d tokens in the window ending %s; limit %d", inWindow, p.at.Sub(clockStart), limit)
			}
		}
		// A budget that refuses everything must fail too: demand always exceeds
		// the limit, so at least half of it per elapsed window must be granted.
		elapsed := phases[len(phases)-1].at.Sub(clockStart)
		if floor := int(float64(limit) * (elapsed.Seconds() / window.Seconds()) / 2); total < floor {
			t.Fatalf("granted %d tokens over %s; want at least %d", total, elapsed, floor)
		}
		t.Logf("granted %d tokens over %s (%d phases)", total, elapsed, len(phases))
	})

	t.Run("RetryAfterUntilOldestLeaves", func(t *testing.T) {
		t.Parallel()
		clock := newClock()
		a, b := newReplicas(t, Config{Limit: 10, Window: 10 * time.Second, Now: clock.Now})
		bucket := 10 * time.Second / bucketsPerWindow
		wantGranted(t, a, "k", 4)
		clock.Advance(3 * time.Second)
		wantGranted(t, b, "k", 6)
		wait := wantRefused(t, a, "k", 1)
		// The 4 tokens granted at 0 leave the window at 10 s, 7 s from now.
		if exact := 7 * time.Second; wait < exact || wait > exact+bucket {
			t.Fatalf("RetryAfter = %s; want between %s and %s", wait, exact, exact+bucket)
		}
		clock.Advance(wait - time.Microsecond)
		wantRefused(t, b, "k", 1)
		clock.Advance(time.Microsecond)
		wantRefused(t, a, "k", 5) // only the first 4 have left
		wantGranted(t, b, "k", 4)
		wantRefused(t, a, "k", 1)
	})

	t.Run("DailyLimit", func(t *testing.T) {
		t.Parallel()
		clock := newClock()
		a, b := newReplicas(t, Config{Limit: 10, Window: time.Second, DailyLimit: 25, Now: clock.Now})
		wantGranted(t, a, "k", 10)
		clock.Advance(2 * time.Second)
		wantGranted(t, b, "k", 10)
		clock.Advance(2 * time.Second)
		wantGranted(t, a, "k", 4)
		wait := wantRefused(t, b, "k", 2) // the window has room, the day has 1
		midnight := time.Date(2025, 3, 5, 0, 0, 0, 0, time.UTC)
		if want := midnight.Sub(clock.Now()); wait != want {
			t.Fatalf("RetryAfter = %s; want %s (until midnight UTC)", wait, want)
		}
		wantGranted(t, b, "k", 1)
		clock.Advance(wait)
		wantGranted(t, a, "k", 10)
	})

	t.Run("RateLimitedPausesEveryReplica", func(t *testing.T) {
		t.Parallel()
		clock := newClock()
		window := 10 * time.Second
		a, b := newReplicas(t, Config{Limit: 100, Window: window, Now: clock.Now})
		paused := func(t *testing.T, bud Budget, key string) time.Duration {
			t.Helper()
			d, err := bud.(Scheduler).Paused(ctx, key)
			if err != nil {
				t.Fatalf("Paused(%q): %v", key, err)
			}
			return d
		}
		if d := paused(t, b, "k"); d != 0 {
			t.Fatalf("Paused before any 429 = %s; want 0", d)
		}
		if err := a.Observe(ctx, "k", Observation{RateLimited: true, Policy: PolicyTenSecondlyRolling}); err != nil {
			t.Fatal(err)
		}
		wait := wantRefused(t, b, "k", 1)
		if bucket := window / bucketsPerWindow; wait < window || wait > window+bucket {
			t.Fatalf("RetryAfter after a 429 = %s; want the rest of the window (%s to %s)", wait, window, window+bucket)
		}
		// A caller holding a grant booked before the 429 learns of the pause.
		if d := paused(t, b, "k"); d != wait {
			t.Fatalf("Paused after a 429 = %s; want the refusal's %s", d, wait)
		}
		clock.Advance(wait - time.Microsecond)
		wantRefused(t, a, "k", 1)
		if d := paused(t, a, "k"); d != time.Microsecond {
			t.Fatalf("Paused a microsecond before the pause ends = %s", d)
		}
		clock.Advance(time.Microsecond)
		if d := paused(t, a, "k"); d != 0 {
			t.Fatalf("Paused once the pause ended = %s; want 0", d)
		}
		wantGranted(t, b, "k", 100)

		// A longer Retry-After wins over the window.
		if err := b.Observe(ctx, "k", Observation{RateLimited: true, Policy: PolicyTenSecondlyRolling, RetryAfter: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
		if wait := wantRefused(t, a, "k", 1); wait != 30*time.Second {
			t.Fatalf("RetryAfter = %s; want the 429's 30s", wait)
		}
		// Other keys are not paused.
		wantGranted(t, a, "other", 100)
	})

	t.Run("RateLimitedDaily", func(t *testing.T) {
		t.Parallel()
		clock := newClock()
		a, b := newReplicas(t, Config{Now: clock.Now})
		if err := a.Observe(ctx, "k", Observation{RateLimited: true, Policy: PolicyDaily}); err != nil {
			t.Fatal(err)
		}
		wait := wantRefused(t, b, "k", 1)
		if want := 12 * time.Hour; wait != want {
			t.Fatalf("RetryAfter after a DAILY 429 = %s; want %s (until midnight UTC)", wait, want)
		}
		clock.Advance(wait)
		wantGranted(t, b, "k", 100)
	})

	t.Run("DayOfTheAccountsTimeZone", func(t *testing.T) {
		t.Parallel()
		// The clock starts at 12:00 UTC: 04:00 in Los Angeles (UTC-8), 21:00
		// in Tokyo (UTC+9). HubSpot resets the daily limit at the account's
		// midnight: 20 h and 3 h away.
		for _, c := range []struct {
			zone string
			wait time.Duration
		}{{"America/Los_Angeles", 20 * time.Hour}, {"Asia/Tokyo", 3 * time.Hour}} {
			zone, err := time.LoadLocation(c.zone)
			if err != nil {
				t.Fatal(err)
			}
			clock := newClock()
			a, b := newReplicas(t, Config{Limit: 10, Window: time.Second, DailyLimit: 15, TimeZone: zone, Now: clock.Now})
			wantGranted(t, a, "k", 10)
			clock.Advance(2 * time.Second)
			if wait := wantRefused(t, b, "k", 10); wait != c.wait-2*time.Second {
				t.Fatalf("%s: RetryAfter with the day's count full = %s; want %s (until the account's midnight)", c.zone, wait, c.wait-2*time.Second)
			}
			if err := a.Observe(ctx, "k", Observation{RateLimited: true, Policy: PolicyDaily}); err != nil {
				t.Fatal(err)
			}
			if wait := wantRefused(t, b, "k", 1); wait != c.wait-2*time.Second {
				t.Fatalf("%s: RetryAfter after a DAILY 429 = %s; want %s (until the account's midnight)", c.zone, wait, c.wait-2*time.Second)
			}
			clock.Advance(c.wait - 2*time.Second)
			wantGranted(t, b, "k", 10) // a new day: the count starts again
			clock.Advance(2 * time.Second)
			wantGranted(t, a, "k", 5)
			wantRefused(t, a, "k", 1)
		}
	})

	t.Run("RemainingShrinksTheWindow", func(t *testing.T) {
		t.Parallel()
		clock := newClock()
		a, b := newReplicas(t, Config{Limit: 100, Now: clock.Now})
		wantGranted(t, a, "k", 10)
		// A higher Remaining than the budget believes is ignored.
		if err := a.Observe(ctx, "k", Observation{Max: 100, Remaining: 95, Interval: 10 * time.Second}); err != nil {
			t.Fatal(err)
		}
		if err := a.Observe(ctx, "k", Observation{Remaining: 0}); err != nil { // no headers
			t.Fatal(err)
		}
		clock.Advance(time.Second)
		// HubSpot says 50 are left while the budget believes 90: 40 more are counted.
		if err := b.Observe(ctx, "k", Observation{Max: 100, Remaining: 50, Interval: 10 * time.Second}); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, a, "k", 51)
		wantGranted(t, a, "k", 50)
		// The first 10 leave at 10 s, the 40 counted at 1 s leave at 11 s.
		clock.Advance(9*time.Second + 100*time.Millisecond)
		wantRefused(t, b, "k", 11)
		wantGranted(t, b, "k", 10)
		clock.Advance(time.Second)
		wantGranted(t, b, "k", 40)
	})

	t.Run("DailyRemainingShrinksTheDay", func(t *testing.T) {
		t.Parallel()
		clock := newClock()
		a, b := newReplicas(t, Config{Now: clock.Now})
		if err := a.Observe(ctx, "k", Observation{Max: 100, Remaining: 100, DailyMax: 250000, DailyRemaining: 5}); err != nil {
			t.Fatal(err)
		}
		if wait := wantRefused(t, b, "k", 6); wait != 12*time.Hour {
			t.Fatalf("RetryAfter = %s; want 12h (until midnight UTC)", wait)
		}
		wantGranted(t, b, "k", 5)
	})

	t.Run("ImpossibleRequestsAreErrors", func(t *testing.T) {
		t.Parallel()
		a, _ := newReplicas(t, Config{Limit: 10})
		for _, c := range []struct {
			key    string
			tokens int
			want   error
		}{
			{"k", 11, ErrTooManyTokens},
			{"k", 0, ErrInvalidTokens},
			{"k", -1, ErrInvalidTokens},
			{SearchKey("k"), 6, ErrTooManyTokens},
			{"", 1, ErrInvalidKey},
		} {
			if _, err := a.Reserve(ctx, c.key, c.tokens); !errors.Is(err, c.want) {
				t.Errorf("Reserve(%q, %d) = %v; want %v", c.key, c.tokens, err, c.want)
			}
		}
		if err := a.Observe(ctx, "", Observation{}); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Observe(\"\") = %v; want ErrInvalidKey", err)
		}
	})

	t.Run("SearchHasItsOwnBudget", func(t *testing.T) {
		t.Parallel()
		clock := newClock()
		a, b := newReplicas(t, Config{Limit: 10, Now: clock.Now})
		key := SearchKey("portal:1:private-app:primary")
		wantGranted(t, a, key, 3)
		wantGranted(t, b, key, 2)
		wait := wantRefused(t, a, key, 1)
		if wait < time.Second || wait > time.Second+SearchWindow/bucketsPerWindow {
			t.Fatalf("search RetryAfter = %s; want about 1s", wait)
		}
		wantGranted(t, b, "portal:1:private-app:primary", 10) // the normal budget is separate
		clock.Advance(wait)
		wantGranted(t, b, key, 5)
	})
}

// checkWindows asserts that in every half-open window of length w ending at a
// grant, the grants sum to at most limit. grants are (time µs, tokens).
func checkWindows(t *testing.T, grants [][2]int64, w time.Duration, limit int64) {
	t.Helper()
	slices.SortFunc(grants, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	var sum int64
	lo := 0
	for _, g := range grants {
		sum += g[1]
		for grants[lo][0] <= g[0]-w.Microseconds() {
			sum -= grants[lo][1]
			lo++
		}
		if sum > limit {
			t.Fatalf("granted %d tokens in the %s ending at %d µs; limit %d", sum, w, g[0], limit)
		}
	}
}
