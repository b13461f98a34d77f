package outbound_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/outbox"
	recordsvc "github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/pgstore"
)

// TestBenchOutbound measures sustained throughput against the simulator at
// 100 calls/10 s with 3 replicas (3 workers, each with its own connection
// pool, store and SQL budget) on one PostgreSQL database. It runs in real time
// (about a minute) and only with HUBSYNC_BENCH_OUTBOUND=1:
//
//	HUBSYNC_BENCH_OUTBOUND=1 go test ./outbound -run TestBenchOutbound -v
//
// HUBSYNC_BENCH_LOCAL_RECORDS=1 sets Config.LocalRecords, as serve does.
//
// It asserts nothing about time; it prints the numbers for BENCHMARKS.md.
func TestBenchOutbound(t *testing.T) {
	if os.Getenv("HUBSYNC_BENCH_OUTBOUND") == "" {
		t.Skip("set HUBSYNC_BENCH_OUTBOUND=1 to run the outbound benchmark (real time, about a minute)")
	}
	measure := 30 * time.Second
	if v, err := time.ParseDuration(os.Getenv("HUBSYNC_BENCH_DURATION")); err == nil {
		measure = v
	}
	const warmup = 12 * time.Second // past the first window's burst
	records := int(1300 * (warmup + measure + 5*time.Second).Seconds())
	ctx := context.Background()
	db := dbtest.Migrated(t, store.Postgres)
	sim := hubspotsim.NewTest(t, hubspotsim.Config{TenSecondLimit: 100})

	// HUBSYNC_BENCH_STORE=mem puts the queue in one shared memRepo instead
	// of PostgreSQL (budget and links stay on PostgreSQL), to separate the
	// worker's own ceiling from the store's claim latency.
	var mem *memRepo
	if os.Getenv("HUBSYNC_BENCH_STORE") == "mem" {
		mem = newMemRepo(time.Now)
		for i := range records {
			id := fmt.Sprintf("b1-%07d", i)
			payload, _ := outbox.Snapshot{ID: id, Fields: map[string]any{"email": id + "@example.com", "first_name": "B"}}.Marshal()
			if _, err := mem.Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: id, EventType: store.EventCreate, Payload: payload}); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		enqueue(t, db, records, 1)
	}
	t.Logf("enqueued %d create events", records)

	conc := 0 // the default
	if v, err := strconv.Atoi(os.Getenv("HUBSYNC_BENCH_CONCURRENCY")); err == nil {
		conc = v
	}
	// HUBSYNC_BUDGET_PACE sets budget.Config.Pace, as for hubsync serve.
	var pace int
	if v := os.Getenv("HUBSYNC_BUDGET_PACE"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("HUBSYNC_BUDGET_PACE=%q: want an integer (the budget's Pace)", v)
		}
		pace = p
	}
	ph := newPhases()
	var ws []*outbound.Worker
	var stores []store.Store
	for i := range 3 {
		sdb := dbtest.Open(t, db.URL)
		// The pool a replica gets from pgstore.Open (hubsync serve): with
		// database/sql's default of 2 idle connections, a replica's
		// concurrent cycles would open and close connections every cycle.
		sdb.SetMaxOpenConns(pgstore.MaxOpenConnsDefault)
		sdb.SetMaxIdleConns(pgstore.MaxOpenConnsDefault)
		st, err := pgstore.New(sdb, store.Config{})
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, st)
		bud, err := budget.NewSQL(sdb, store.Postgres, budget.Config{Limit: 100, Pace: pace})
		if err != nil {
			t.Fatal(err)
		}
		client, err := hubspot.NewClient(hubspot.Config{BaseURL: sim.URL(), AccessToken: hubspotsim.AccessTokenDefault, Timeout: 10 * time.Second,
			OnResponse: budget.ObserveHubSpot(timedBudget{bud, ph}, "hubspot:bench", testLogger())})
		if err != nil {
			t.Fatal(err)
		}
		var repo store.OutboundRepository = st.Outbound()
		if mem != nil {
			repo = mem
		}
		cfg := outbound.Config{Store: timedRepo{repo, ph}, HubSpot: timedHubSpot{client, ph},
			Links: timedLinks{links.New(st), ph}, Budget: timedBudget{bud, ph}, Concurrency: conc,
			BudgetKey: "hubspot:bench", Owner: fmt.Sprint("replica", i), Logger: testLogger(), PollInterval: 50 * time.Millisecond}
		if os.Getenv("HUBSYNC_BENCH_LOCAL_RECORDS") != "" {
			// As serve wires it: after each call's links, the records
			// service checks which records were deleted meanwhile.
			recs, err := recordsvc.New(st, links.New(st), recordsvc.Config{})
			if err != nil {
				t.Fatal(err)
			}
			cfg.LocalRecords = recs
		}
		w, err := outbound.NewWorker(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	start := time.Now()
	for _, w := range ws {
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	processed := func() int64 {
		if mem != nil {
			return mem.processed()
		}
		s, err := stores[0].Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, r := range s.Rows {
			if r.Direction == store.DirectionOutbound && r.Status == store.StatusProcessed {
				n += r.Count
			}
		}
		return n
	}
	waitUntil := func(d time.Duration) {
		time.Sleep(time.Until(start.Add(d))) // a benchmark's clock, not a test's wait
	}
	waitUntil(warmup)
	ph.reset()
	p0, c0 := processed(), sim.Counters()
	waitUntil(warmup + measure)
	p1, c1 := processed(), sim.Counters()
	for _, w := range ws {
		_ = w.Stop(ctx)
	}
	rate := float64(p1-p0) / measure.Seconds()
	calls := c1.Requests - c0.Requests
	var m outbound.MetricsSnapshot
	for _, w := range ws {
		s := w.Metrics().Snapshot()
		m.BudgetDenied += s.BudgetDenied
		m.BudgetBooked += s.BudgetBooked
		m.RateLimited += s.RateLimited
		m.Retried += s.Retried
	}
	t.Logf("per-operation latency in the steady window (all replicas, %d loops each):\n%s", ws[0].Concurrency(), ph)
	t.Logf("steady window %s: %d events processed = %.0f records/s = %.1f%% of the 1000/s ceiling; %d calls (%.1f records/call); real 429s total %d; budget refusals %d; retries %d",
		measure, p1-p0, rate, rate/10, calls, float64(p1-p0)/float64(max(calls, 1)), c1.RateLimited429["TEN_SECONDLY_ROLLING"], m.BudgetDenied, m.Retried)
	t.Logf("calls booked ahead (Config.BudgetAhead): %d", m.BudgetBooked)
	// Where a shortfall goes: a window that held fewer calls than the limit
	// had room no call took.
	if fill := ph.windowFill(start.Add(warmup), start.Add(warmup+measure), 10*time.Second, 100*time.Millisecond); len(fill) > 0 {
		slices.Sort(fill)
		t.Logf("calls in HubSpot's 10 s window, ending every 100 ms of the steady window's last %s: min %d, median %d, max %d (limit 100)",
			measure-10*time.Second, fill[0], fill[len(fill)/2], fill[len(fill)-1])
	}
}

// TestBenchHotRecords compares HubSpot calls per record change for a hot
// workload (300 records × 10 changes, all queued before the workers start),
// on the PostgreSQL store and on memRepo (which hands a record's events out
// together). Runs with HUBSYNC_BENCH_OUTBOUND=1; the budget is out of the way.
func TestBenchHotRecords(t *testing.T) {
	if os.Getenv("HUBSYNC_BENCH_OUTBOUND") == "" {
		t.Skip("set HUBSYNC_BENCH_OUTBOUND=1 to run the outbound benchmark")
	}
	const nRecords, changes = 300, 10
	for _, name := range []string{"postgres", "memrepo"} {
		t.Run(name, func(t *testing.T) {
			b := setup(t, options{dialect: store.Postgres, tenSecond: 100000, budgetLimit: 100000})
			var repo store.OutboundRepository = b.st.Outbound()
			if name == "memrepo" {
				repo = newMemRepo(b.clock.Now)
			}
			ctx := context.Background()
			for c := range changes {
				for i := range nRecords {
					id := "hot" + strconv.Itoa(i)
					ev := hotEvent(id, i, c)
					if _, err := repo.Enqueue(ctx, ev); err != nil {
						t.Fatal(err)
					}
				}
			}
			// A claim of 1000 events holds 100 hot records' ten changes each:
			// one full upsert call.
			w := b.worker(t, func(cfg *outbound.Config) { cfg.Store = repo; cfg.BatchSize = 1000 })
			for {
				s, err := w.RunOnce(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if s.Claimed == 0 {
					break
				}
			}
			m := w.Metrics().Snapshot()
			t.Logf("%s: %d changes to %d records → %d HubSpot calls = %.4f calls per change (%d events coalesced)",
				name, nRecords*changes, nRecords, m.TotalCalls(), float64(m.TotalCalls())/float64(nRecords*changes), m.Coalesced)
		})
	}
}

func hotEvent(id string, i, change int) store.OutboundEvent {
	fields := func(c int) map[string]any {
		return map[string]any{"email": fmt.Sprintf("hot%d@example.com", i), "first_name": fmt.Sprint("v", c)}
	}
	ev := store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: id, EventType: store.EventCreate}
	ev.Payload, _ = outbox.Snapshot{ID: id, Fields: fields(change)}.Marshal()
	if change > 0 {
		ev.EventType = store.EventUpdate
		ev.OldPayload, _ = outbox.Snapshot{ID: id, Fields: fields(change - 1)}.Marshal()
	}
	return ev
}

// enqueue writes n contact-create events, 1000 per transaction.
func enqueue(t *testing.T, db *dbtest.DB, n int, seed int) {
	t.Helper()
	ctx := context.Background()
	st, err := pgstore.New(db.DB, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; {
		tx, err := db.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 1000 && i < n; j, i = j+1, i+1 {
			id := fmt.Sprintf("b%d-%07d", seed, i)
			payload, _ := outbox.Snapshot{ID: id, Fields: map[string]any{"email": id + "@example.com", "first_name": "B"}}.Marshal()
			if _, err := st.Outbound().EnqueueTx(ctx, tx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts",
				RecordID: id, EventType: store.EventCreate, Payload: payload}); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}
