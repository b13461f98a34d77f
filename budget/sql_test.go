package budget

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

func newSQL(t testing.TB, db *dbtest.DB, cfg Config) *SQL {
	t.Helper()
	b, err := NewSQL(db.DB, db.Dialect, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSQL(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		exercise(t, func(t *testing.T, cfg Config) (Budget, Budget) {
			// Two instances on one database are two replicas.
			db := dbtest.Migrated(t, d)
			return newSQL(t, db, cfg), newSQL(t, db, cfg)
		}, 30)
	})
}

func TestSQLOtherWindowIsConvertedSafely(t *testing.T) {
	db := dbtest.Migrated(t, store.SQLite)
	clock := newClock()
	ctx := context.Background()
	a := newSQL(t, db, Config{Limit: 10, Window: 10 * time.Second, Now: clock.Now})
	b := newSQL(t, db, Config{Limit: 10, Window: time.Second, Now: clock.Now})
	if r, err := a.Reserve(ctx, "k", 10); err != nil || !r.Granted {
		t.Fatalf("Reserve = %+v, %v", r, err)
	}
	clock.Advance(500 * time.Millisecond)
	// b's window is 1 s: a's 10 calls at 0 are taken as made at the end of a's
	// bucket (0.1 s), so they leave b's window at 1.1 s, not before.
	r, err := b.Reserve(ctx, "k", 1)
	if err != nil || r.Granted || r.RetryAfter < 500*time.Millisecond {
		t.Fatalf("Reserve = %+v, %v; want refused for at least 500ms", r, err)
	}
	clock.Advance(r.RetryAfter)
	if r, err := b.Reserve(ctx, "k", 10); err != nil || !r.Granted {
		t.Fatalf("Reserve after RetryAfter = %+v, %v; want granted", r, err)
	}
}

func TestSQLRecreatesDeletedRow(t *testing.T) {
	db := dbtest.Migrated(t, store.SQLite)
	ctx := context.Background()
	b := newSQL(t, db, Config{})
	if _, err := b.Reserve(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DB.Exec("DELETE FROM hubsync_budget"); err != nil {
		t.Fatal(err)
	}
	if r, err := b.Reserve(ctx, "k", 1); err != nil || !r.Granted {
		t.Fatalf("Reserve after the row was deleted = %+v, %v; want granted", r, err)
	}
}

func TestNewSQLRejectsUnknownDialect(t *testing.T) {
	db := dbtest.Migrated(t, store.SQLite)
	if _, err := NewSQL(db.DB, "oracle", Config{}); err == nil {
		t.Fatal("NewSQL with dialect oracle succeeded")
	}
}

// Environment of TestHelperProcess, set by TestSQLCrossProcess.
const (
	helperURLEnv     = "HUBSYNC_BUDGET_HELPER_URL"
	helperSeedEnv    = "HUBSYNC_BUDGET_HELPER_SEED"
	crossLimit       = 20
	crossWindow      = time.Second
	crossIterations  = 200
	crossMaxWaitStep = 10 * time.Millisecond
)

// TestHelperProcess is not a test: TestSQLCrossProcess runs the test binary with
// it as a child process that reserves against a shared database and prints each
// grant as "grant <clock µs> <tokens>".
func TestHelperProcess(t *testing.T) {
	rawURL := os.Getenv(helperURLEnv)
	if rawURL == "" {
		t.Skip("helper process of TestSQLCrossProcess")
	}
	d, err := store.DialectOf(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	db := dbtest.Open(t, rawURL)
	// Reserve reads the clock exactly once, under the row lock; recording that
	// reading tells the parent when the budget counted each grant.
	var last atomic.Int64
	now := func() time.Time {
		n := time.Now()
		last.Store(n.UnixMicro())
		return n
	}
	b, err := NewSQL(db, d, Config{Limit: crossLimit, Window: crossWindow, DailyLimit: -1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := strconv.ParseUint(os.Getenv(helperSeedEnv), 10, 64)
	rng := rand.New(rand.NewPCG(seed, seed))
	ctx := context.Background()
	for range crossIterations {
		tokens := 1 + rng.IntN(3)
		r, err := b.Reserve(ctx, "cross", tokens)
		if err != nil {
			t.Fatal(err)
		}
		if r.Granted {
			fmt.Printf("grant %d %d\n", last.Load(), tokens)
			continue
		}
		// A worker honouring RetryAfter, but polling often so that the two
		// processes race for every freed token.
		<-time.After(min(r.RetryAfter, crossMaxWaitStep))
	}
}

func TestSQLCrossProcess(t *testing.T) {
	if os.Getenv(helperURLEnv) != "" {
		t.Skip("inside a helper process")
	}
	for _, d := range []store.Dialect{store.Postgres, store.MySQL} {
		t.Run(dbtest.Name(d), func(t *testing.T) {
			t.Parallel()
			db := dbtest.Migrated(t, d)
			var (
				wg     sync.WaitGroup
				mu     sync.Mutex
				grants [][2]int64
				perPID [2]int64
			)
			for i := range 2 {
				cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
				cmd.Env = append(os.Environ(), helperURLEnv+"="+db.URL, helperSeedEnv+"="+strconv.Itoa(i+1))
				var out, errOut bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errOut
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				wg.Go(func() {
					if err := cmd.Wait(); err != nil {
						t.Errorf("helper %d: %v\n%s%s", i, err, out.String(), errOut.String())
						return
					}
					sc := bufio.NewScanner(&out)
					mu.Lock()
					defer mu.Unlock()
					for sc.Scan() {
						f := strings.Fields(sc.Text())
						if len(f) != 3 || f[0] != "grant" {
							continue
						}
						at, err1 := strconv.ParseInt(f[1], 10, 64)
						n, err2 := strconv.ParseInt(f[2], 10, 64)
						if err1 != nil || err2 != nil {
							t.Errorf("helper %d printed %q", i, sc.Text())
							continue
						}
						grants = append(grants, [2]int64{at, n})
						perPID[i] += n
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			t.Logf("granted %v tokens to the two processes (%d grants)", perPID, len(grants))
			if total := perPID[0] + perPID[1]; total < crossLimit/2 {
				t.Fatalf("granted %d tokens in all; want at least %d (is the budget refusing everything?)", total, crossLimit/2)
			}
			checkWindows(t, grants, crossWindow, crossLimit)
		})
	}
}

// BenchmarkReserveSQL measures granted reservations per second on one key, from
// one goroutine (serial) and from 8 (contended: they queue on the row lock).
func BenchmarkReserveSQL(b *testing.B) {
	for _, d := range dbtest.Dialects {
		b.Run(dbtest.Name(d), func(b *testing.B) {
			db := dbtest.Migrated(b, d)
			bud := newSQL(b, db, Config{Limit: 1 << 30, DailyLimit: -1})
			ctx := context.Background()
			b.Run("serial", func(b *testing.B) {
				start := time.Now()
				for b.Loop() {
					if r, err := bud.Reserve(ctx, "bench", 1); err != nil || !r.Granted {
						b.Fatal(r, err)
					}
				}
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "reservations/s")
			})
			b.Run("parallel8", func(b *testing.B) {
				b.SetParallelism(max(1, 8/runtimeProcs()))
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if r, err := bud.Reserve(ctx, "bench", 1); err != nil || !r.Granted {
							b.Error(r, err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "reservations/s")
			})
		})
	}
}
