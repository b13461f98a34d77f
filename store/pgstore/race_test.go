package pgstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/pgstore"
)

// The zombie race: a worker whose lease expired (a zombie) changes one of its
// record's events in a transaction that commits after a concurrent claim took
// its statement's snapshot and before the claim locks the record's lane. The
// claim then reads the record's events as they were (the zombie's event
// processing under an expired lease: claimable), and only the row locks it
// takes later see the zombie's change (PostgreSQL's re-check of the newest
// version of a row that a commit after the snapshot changed, in READ
// COMMITTED).
//
// Per-record order must hold all the same: the claim leases no event while an
// earlier event of the record is unfinished and not leased by the same claim.
// What keeps it:
//
//   - The zombie delays the head (Release with a delay, IncrementRetry): its
//     trigger moves the lane's DueDate past the claim's now, and the lane
//     lock's re-check of DueDate <= now on the lane's newest version drops the
//     lane, so the claim leases nothing of the record. locked's re-check
//     (below) would drop the head too, and ok the record with it. ClaimIDs
//     locks the head it is named with FOR UPDATE, re-checked the same way.
//   - The zombie finishes the head (Complete, Fail): the lane re-check passes
//     (the new head is due, and the lane stays Claimed, migrations 023 and
//     024: the zombie still holds its followers' leases, expired) and the UPDATE's
//     re-check drops the finished head;
//     its followers are the record's first unfinished events, leased in order.
//   - The zombie delays a follower it holds while the head stays claimable (a
//     partial Release, or IncrementRetry of a follower in a batch): the lane
//     does not change (its head is still due), so only the event row locks can
//     see it. The UPDATE's re-check alone dropped the delayed follower and
//     leased the events behind it out of order (Claim and ClaimIDs alike).
//     Since migration 022 the locked CTE (the template lockprefix) re-checks
//     each event it locks, and ok cuts the record at the first one that is
//     unfinished and no longer claimable.

// zombieIndex is the index whose lock orders the race: every claim (and the
// zombie's statement) opens it, at executor start, to update the events.
const zombieIndex = "_system_integrationoutbound_pkey"

// zombieClaim is one forced interleaving: claim (on the connection with
// backend pid claimPID) takes its statement's snapshot while the zombie's
// transaction is open, and locks the record's lane and events after the
// zombie committed.
//
// It forces the order with PostgreSQL's lock queue. A statement takes its
// snapshot, then opens its indexes as the executor starts (ExecInitNode), and
// reads rows only after that; its tables were locked before the snapshot
// (plan cache), its indexes were not, once its plan is cached (generic) and
// needs no planning. The zombie's statement holds ROW EXCLUSIVE on every
// index of the events table until it commits; a blocker waits for ACCESS
// EXCLUSIVE on one of them (ALTER INDEX, rolled back) behind the zombie, and
// the claim's request for the index queues behind the blocker's, its snapshot
// taken. The zombie commits, the blocker gets its lock and rolls back, and the
// claim runs on its old snapshot. Each step waits on pg_locks, never on time.
// runZombie's witness tells whether the claim did run on the old snapshot,
// and the negative controls (TestClaimZombieRaceControls) that the race then
// breaks the order without the claim's guards.
func zombieClaim(t *testing.T, db *sql.DB, zombie *sql.Tx, claimPID int, claim func(context.Context) ([]store.OutboundEvent, error)) []store.OutboundEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	blocker, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close()
	blockerPID := backendPID(t, blocker)
	btx, err := blocker.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer btx.Rollback()
	locked := make(chan error, 1)
	go func() {
		_, err := btx.ExecContext(ctx, "ALTER INDEX "+zombieIndex+" SET TABLESPACE pg_default")
		locked <- err
	}()
	waitLockWait(ctx, t, db, blockerPID, "the blocker's lock of the index behind the zombie")

	type result struct {
		evs []store.OutboundEvent
		err error
	}
	claimed := make(chan result, 1)
	go func() {
		evs, err := claim(ctx)
		claimed <- result{evs, err}
	}()
	waitLockWait(ctx, t, db, claimPID, "the claim's lock of the index behind the blocker")

	if err := zombie.Commit(); err != nil {
		t.Fatalf("commit the zombie: %v", err)
	}
	if err := <-locked; err != nil {
		t.Fatalf("blocker: %v", err)
	}
	if err := btx.Rollback(); err != nil {
		t.Fatal(err)
	}
	r := <-claimed
	if r.err != nil {
		t.Fatalf("claim: %v", r.err)
	}
	return r.evs
}

func backendPID(t *testing.T, c *sql.Conn) int {
	t.Helper()
	var pid int
	if err := c.QueryRowContext(context.Background(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitLockWait waits until backend pid waits for a lock on zombieIndex.
func waitLockWait(ctx context.Context, t *testing.T, db *sql.DB, pid int, what string) {
	t.Helper()
	for {
		var waiting bool
		if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
			WHERE pid = $1 AND NOT granted AND locktype = 'relation'
			  AND relation = $2::regclass)`, pid, zombieIndex).Scan(&waiting); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if waiting {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(time.Millisecond):
		}
	}
}

// zombieTx runs the store's query name (Release, Retry, Fail or Complete of
// the outbound queue) as the zombie would, in a transaction it leaves open,
// and requires that it changed one event.
func zombieTx(t *testing.T, db *sql.DB, s *pgstore.Store, name string, args map[string]any) *sql.Tx {
	t.Helper()
	text, names, ok := s.Query(store.DirectionOutbound, name)
	if !ok {
		t.Fatalf("no %s query", name)
	}
	var bind []any
	for _, n := range names {
		v, ok := args[n]
		if !ok {
			t.Fatalf("%s: no argument %s", name, n)
		}
		bind = append(bind, v)
	}
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	res, err := tx.ExecContext(context.Background(), text, bind...)
	if err != nil {
		t.Fatalf("zombie %s: %v", name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("zombie %s changed %d events, want 1", name, n)
	}
	return tx
}

// outOfOrder reports each event leased by owner while an earlier event of its
// record is unfinished and not leased by owner.
func outOfOrder(t *testing.T, db *sql.DB, owner string) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `
SELECT l.Id, e.Id, e.Status FROM _System_IntegrationOutbound l
JOIN _System_IntegrationOutbound e
  ON e.Destination = l.Destination AND e.ObjectType = l.ObjectType AND e.RecordID = l.RecordID AND e.Lane < l.Lane
WHERE l.Status = 'processing' AND l.LeaseOwner = $1
  AND e.Status IN ('pending', 'processing') AND e.LeaseOwner IS DISTINCT FROM $1
ORDER BY l.Lane, e.Lane`, owner)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var leased, earlier, status string
		if err := rows.Scan(&leased, &earlier, &status); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s leased ahead of %s (%s)", leased, earlier, status))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// raceStore is a store on a fresh schema over one connection (so that its
// claims run where zombieClaim watches them) with a clock the test sets.
type raceStore struct {
	db    *sql.DB // the schema's pool, for the zombie and the checks
	s     *pgstore.Store
	pid   int // the backend of s's one connection
	clock *atomic.Int64
	base  time.Time
}

// newRaceStore returns a raceStore. Its connection plans every statement
// generically (plan_cache_mode), as the claim functions do, so that ClaimIDs,
// once prepared and run, is not planned again: planning would lock its
// indexes before its snapshot, and zombieClaim needs them locked after.
func newRaceStore(t *testing.T) *raceStore {
	t.Helper()
	m := dbtest.Migrated(t, store.Postgres)
	u, err := url.Parse(m.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("plan_cache_mode", "force_generic_plan")
	u.RawQuery = q.Encode()
	one := dbtest.Open(t, u.String())
	one.SetMaxOpenConns(1)
	one.SetMaxIdleConns(1)
	r := &raceStore{db: m.DB, clock: new(atomic.Int64), base: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	if r.s, err = pgstore.New(one, store.Config{Now: r.now}); err != nil {
		t.Fatal(err)
	}
	if err := one.QueryRowContext(context.Background(), "SELECT pg_backend_pid()").Scan(&r.pid); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *raceStore) now() time.Time { return r.base.Add(time.Duration(r.clock.Load())) }

func claimParams(owner string) store.ClaimParams {
	return store.ClaimParams{Key: "hubspot", Limit: 10, MaxPerRecord: 10, LeaseDuration: time.Minute, Owner: owner}
}

func ids(evs []store.OutboundEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.ID)
	}
	return out
}

// zombieCase is what the zombie does to which of the three events of record
// A it holds, and what a claim (Claim, or ClaimIDs of A's first event) must
// lease when the zombie commits between its snapshot and its locks.
type zombieCase struct {
	name  string
	event int    // 0: the head, 1: the middle one
	query string // the store's query the zombie runs
	// claim and claimIDs are the events (by index) that Claim and ClaimIDs
	// lease: those the record's state allows, in order.
	claim, claimIDs []int
}

var zombieCases = []zombieCase{
	{"head released with a delay", 0, "Release", nil, nil},
	{"head in backoff", 0, "Retry", nil, nil},
	{"head completed", 0, "Complete", []int{1, 2}, nil},
	{"head dead-lettered", 0, "Fail", []int{1, 2}, nil},
	{"follower released with a delay", 1, "Release", []int{0}, []int{0}},
	{"follower in backoff", 1, "Retry", []int{0}, []int{0}},
	{"follower dead-lettered", 1, "Fail", []int{0, 2}, []int{0, 2}},
}

// zombieAttempts bounds the tries of a forced interleaving. A try misses when
// the claim locks the index before its snapshot, as it does when it must plan
// its statement again: a CREATE or DROP SCHEMA in the database (the parallel
// tests' schemas) invalidates every cached plan of every backend.
const zombieAttempts = 5

// forceZombie runs zc's interleaving, with Claim or with ClaimIDs of A's first
// event, on a fresh schema whose claim function lacks guards, until it is
// forced (see runZombie's witness), and returns what runZombie does.
func forceZombie(t *testing.T, zc zombieCase, byIDs bool, guards ...guard) (got, want, bad []string) {
	t.Helper()
	for range zombieAttempts {
		r := newRaceStore(t)
		if len(guards) > 0 {
			withoutGuards(t, r.db, guards...)
		}
		got, want, bad, forced := runZombie(t, r, zc, byIDs)
		if forced {
			if len(guards) == 0 {
				checkLanes(t, r.db, "the claim")
			}
			return got, want, bad
		}
	}
	t.Fatalf("the claim took its snapshot after the zombie's commit in %d tries", zombieAttempts)
	return nil, nil, nil
}

// runZombie sets up record A with three events leased by a zombie whose lease
// expired, forces the interleaving of zc with Claim (or ClaimIDs of A's first
// event) and returns A's events the claim leased, those it should have, the
// violations of per-record order, and whether the interleaving was forced.
//
// The witness says whether it was: record W has a due event, and the zombie's
// transaction enqueues a second. A claim on a snapshot taken before the
// zombie's commit leases W's first event alone, on a later one both.
func runZombie(t *testing.T, r *raceStore, zc zombieCase, byIDs bool) (got, want, bad []string, forced bool) {
	t.Helper()
	ctx := context.Background()
	q := r.s.Outbound()
	enqueue := func(tx store.DBTX, record string) string {
		t.Helper()
		r.clock.Add(int64(time.Millisecond))
		res, err := q.EnqueueTx(ctx, tx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts",
			RecordID: record, EventType: "update", Payload: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	var a []string
	for range 3 {
		a = append(a, enqueue(r.db, "A"))
	}
	held, err := q.Claim(ctx, claimParams("zombie"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids(held), ",") != strings.Join(a, ",") {
		t.Fatalf("the zombie's claim got %v, want %v", ids(held), a)
	}
	w1 := enqueue(r.db, "W")
	r.clock.Add(int64(2 * time.Minute)) // the zombie's leases expire
	// The claim's statement must be planned (and its plan cached) by a
	// first run on the connection: planning locks the indexes.
	if _, err := q.Claim(ctx, store.ClaimParams{Key: "warm", Owner: "warm"}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.ClaimIDs(ctx, []string{"warm"}, claimParams("warm")); err != nil {
		t.Fatal(err)
	}

	now := r.now()
	lease := held[zc.event].Lease()
	args := map[string]any{
		"now": now, "next": now.Add(time.Hour), "leases": fmt.Sprintf(`[{"id":%q,"attempt":%d}]`, lease.ID, lease.Attempt),
		"id": lease.ID, "attempt": lease.Attempt, "error": "zombie", "retry_count": 0, "status": "pending",
	}
	zombie := zombieTx(t, r.db, r.s, zc.query, args)
	w2 := enqueue(zombie, "W")
	claim, wantIdx := func(ctx context.Context) ([]store.OutboundEvent, error) {
		return q.Claim(ctx, claimParams("claimer"))
	}, zc.claim
	if byIDs {
		claim, wantIdx = func(ctx context.Context) ([]store.OutboundEvent, error) {
			return q.ClaimIDs(ctx, []string{a[0], w1}, claimParams("claimer"))
		}, zc.claimIDs
	}
	var witness []string
	for _, e := range zombieClaim(t, r.db, zombie, r.pid, claim) {
		if e.RecordID == "W" {
			witness = append(witness, e.ID)
		} else {
			got = append(got, e.ID)
		}
	}
	switch strings.Join(witness, ",") {
	case w1:
		forced = true
	case w1 + "," + w2:
		t.Logf("the claim's snapshot saw the zombie's commit (it planned its statement again); trying again")
	default:
		t.Fatalf("the claim leased %v of W, want %s (or %s, %s)", witness, w1, w1, w2)
	}
	for _, i := range wantIdx {
		want = append(want, a[i])
	}
	return got, want, outOfOrder(t, r.db, "claimer"), forced
}

// TestClaimZombieRace forces the zombie race of each case, for Claim and for
// ClaimIDs, and requires per-record order, and exactly the events the
// record's state allows.
func TestClaimZombieRace(t *testing.T) {
	t.Parallel()
	for _, byIDs := range []bool{false, true} {
		for _, zc := range zombieCases {
			name := "Claim/" + zc.name
			if byIDs {
				name = "ClaimIDs/" + zc.name
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				got, want, bad := forceZombie(t, zc, byIDs)
				if len(bad) > 0 {
					t.Errorf("per-record order broken: %v", bad)
				}
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Errorf("claim got %v, want %v", got, want)
				}
			})
		}
	}
}

// guard is one of the claim function's defences against the zombie race, as
// changes to the function's source that remove it.
type guard struct {
	name  string
	edits []edit
}

// edit replaces the first occurrence of has with without.
type edit struct{ has, without string }

var (
	// laneRecheck: the recovered and free CTEs filter due lanes in a
	// subquery, on the snapshot's lane versions, so the lane lock re-checks
	// nothing (neither DueDate nor Claimed).
	laneRecheck = guard{"the lane lock's DueDate re-check", []edit{
		{"WHERE n.Destination = $1 AND n.Claimed AND n.DueDate <= $2",
			"WHERE n.Destination = $1 AND n.LaneKey IN (SELECT d.LaneKey FROM hubsync_lane_outbound d WHERE d.Destination = $1 AND d.Claimed AND d.DueDate <= $2 OFFSET 0)"},
		{"WHERE n.Destination = $1 AND NOT n.Claimed AND n.DueDate <= $2",
			"WHERE n.Destination = $1 AND n.LaneKey IN (SELECT d.LaneKey FROM hubsync_lane_outbound d WHERE d.Destination = $1 AND NOT d.Claimed AND d.DueDate <= $2 OFFSET 0)"},
	}}
	// lockedRecheck: locked re-checks nothing, as before migration 022.
	lockedRecheck = guard{"locked's re-check (migration 022)", []edit{
		{"    WHERE ((t.Status = 'pending' AND t.NextAttemptDate <= $2)\n      OR (t.Status = 'processing' AND t.LeaseExpiresDate < $2)) OR t.Status NOT IN ('pending', 'processing')\n",
			""},
	}}
)

// withoutGuards replaces the outbound claim function of the test's schema
// with a copy without the guards.
func withoutGuards(t *testing.T, db *sql.DB, guards ...guard) {
	t.Helper()
	ctx := context.Background()
	var def string
	if err := db.QueryRowContext(ctx, "SELECT pg_get_functiondef('hubsync_claim_outbound'::regproc)").Scan(&def); err != nil {
		t.Fatal(err)
	}
	for _, g := range guards {
		for _, e := range g.edits {
			if !strings.Contains(def, e.has) {
				t.Fatalf("the claim function no longer has %s as this control expects (%q); update the control", g.name, e.has)
			}
			def = strings.Replace(def, e.has, e.without, 1)
		}
	}
	if _, err := db.ExecContext(ctx, def); err != nil {
		t.Fatalf("replace the claim function: %v", err)
	}
}

// TestClaimZombieRaceControls is TestClaimZombieRace's negative control: with
// a guard removed from the claim function (in the test's schema only), the
// same forced interleavings must lease events out of order, exactly in the
// cases that guard covers. It shows that the forced interleaving is the race
// (on a snapshot taken after the zombie's commit no claim breaks the order),
// and which guard keeps each case in order:
//
//   - without locked's re-check (the claim before migration 022), a follower
//     that the zombie delays is dropped by the UPDATE and the event behind it
//     leased: the race this migration fixed;
//   - without the lane lock's DueDate re-check, locked's re-check alone
//     still keeps a delayed head in order;
//   - without both, a delayed head is dropped by the UPDATE and its
//     followers leased.
func TestClaimZombieRaceControls(t *testing.T) {
	t.Parallel()
	delayed := []string{"head released with a delay", "head in backoff", "follower released with a delay", "follower in backoff"}
	for _, c := range []struct {
		guards []guard
		breaks []string // the cases that must lease out of order
	}{
		{[]guard{lockedRecheck}, delayed[2:]},
		{[]guard{laneRecheck}, nil},
		{[]guard{laneRecheck, lockedRecheck}, delayed},
	} {
		var names []string
		for _, g := range c.guards {
			names = append(names, g.name)
		}
		for _, name := range delayed {
			zc := zombieCases[slices.IndexFunc(zombieCases, func(zc zombieCase) bool { return zc.name == name })]
			t.Run("without "+strings.Join(names, " and ")+"/"+name, func(t *testing.T) {
				t.Parallel()
				_, _, bad := forceZombie(t, zc, false, c.guards...)
				if slices.Contains(c.breaks, name) && len(bad) == 0 {
					t.Errorf("the claim kept the order without %s; the test does not force the race it guards against", strings.Join(names, " and "))
				}
				if !slices.Contains(c.breaks, name) && len(bad) > 0 {
					t.Errorf("per-record order broken: %v", bad)
				}
			})
		}
	}
}
