package storetest_test

import (
	"context"
	"database/sql"
	"github.com/hubsync/hubsync"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/storetest"
)

// open returns a store of dialect d on db.
func open(tb testing.TB, d store.Dialect, db *sql.DB, cfg store.Config) store.Store {
	tb.Helper()
	s, err := hubsync.NewStore(db, d, cfg)
	if err != nil {
		tb.Fatalf("open %s store: %v", d, err)
	}
	return s
}

func TestConformance(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		storetest.Exercise(t, func(t *testing.T, cfg store.Config) store.Store {
			return open(t, d, dbtest.Migrated(t, d).DB, cfg)
		})
	})
}

// ignoreAttempt is a deliberately broken store: its outbound Complete ignores the
// lease's Attempt, completing whatever claim currently holds the event.
type ignoreAttempt struct{ store.Store }

func (s ignoreAttempt) Outbound() store.OutboundRepository {
	return ignoreAttemptOutbound{s.Store.Outbound()}
}

type ignoreAttemptOutbound struct{ store.OutboundRepository }

func (r ignoreAttemptOutbound) Complete(ctx context.Context, leases ...store.Lease) error {
	for i, l := range leases {
		if ev, err := r.Get(ctx, l.ID); err == nil {
			leases[i].Attempt = ev.Attempt
		}
	}
	return r.OutboundRepository.Complete(ctx, leases...)
}

const brokenEnv = "HUBSYNC_STORETEST_BROKEN"

// TestBrokenStore runs the suite against ignoreAttempt; it only runs inside
// TestSuiteCatchesBrokenStore, and is expected to fail there.
func TestBrokenStore(t *testing.T) {
	if os.Getenv(brokenEnv) == "" {
		t.Skip("run by TestSuiteCatchesBrokenStore")
	}
	storetest.Exercise(t, func(t *testing.T, cfg store.Config) store.Store {
		return ignoreAttempt{open(t, store.SQLite, dbtest.Migrated(t, store.SQLite).DB, cfg)}
	})
}

// TestSuiteCatchesBrokenStore checks that the suite can fail: a store whose
// Complete ignores the fencing Attempt must not pass.
func TestSuiteCatchesBrokenStore(t *testing.T) {
	if os.Getenv(brokenEnv) != "" {
		t.Skip("inside the subprocess")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenStore$/^outbound$/^(Fencing|FencingBatchComplete)$", "-test.v")
	cmd.Env = append(os.Environ(), brokenEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed a store whose Complete ignores the lease's Attempt:\n%s", out)
	}
	for _, want := range []string{"--- FAIL: TestBrokenStore/outbound/Fencing ", "Complete by w1 with lost lease", "want ErrLeaseLost", "--- FAIL: TestBrokenStore/outbound/FencingBatchComplete "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the broken store's run does not report %q:\n%s", want, out)
		}
	}
}
