package mysqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/sqlq"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/mysqlstore"
	"github.com/hubsync/hubsync/store/storetest"
)

// The zombie race on MySQL/MariaDB: a worker whose lease expired (a zombie)
// changes one of its record's events while a claim locks the record's
// followers (ClaimLockFollowers).
//
// Each claim statement is a locking read, so it decides on the newest
// committed version of every row it reads, and holds the row from then on.
// But the follower walk finds the record's unfinished events on the open
// index (record key, Status, Lane), which InnoDB scans in index order: the
// 'pending' entries before the 'processing' ones. A zombie that released (or
// backed off) a follower while the walk waited for a row of the pending
// range moved the follower's entry from the processing range, not yet
// scanned, to the pending range, already scanned: the walk never saw the
// follower, and the claim leased the events behind it out of order. Read
// committed takes no gap locks, so nothing stopped the move. The walk now
// reads the processing range first: a follower it passed is locked, and the
// zombie's change waits for the claim.
//
// The test stops the walk in the pending range with a producer's uncommitted
// enqueue of the record's fourth event (the walk waits for its row lock, seen
// in SHOW ENGINE INNODB STATUS), runs the zombie's change until it returns or
// waits for the claim, then commits the producer. Before the fix, the zombie's
// change of a follower returned while the claim waited, and the delayed or
// released follower was skipped: TestClaimZombieRaceControl runs the walk
// before the fix and requires the out-of-order lease.

// raceStore is a store over one connection (so that its claims run where the
// test watches them) with a clock the test sets, and a second store on the
// same database for the zombie.
type raceStore struct {
	db     *sql.DB     // the database's pool, for the producer and the checks
	s      *sqlq.Store // the claimer's
	zombie *mysqlstore.Store
	// connID and zombieID are CONNECTION_ID() of s's and zombie's one
	// connection.
	connID, zombieID int64
	clock            *atomic.Int64
	base             time.Time
}

// newRaceStore returns a raceStore whose claimer runs the backend's queries,
// or, with walk, ClaimLockFollowers replaced by it.
func newRaceStore(t *testing.T, walk string) *raceStore {
	t.Helper()
	m := dbtest.Migrated(t, store.MySQL)
	one := dbtest.Open(t, m.URL)
	one.SetMaxOpenConns(1)
	one.SetMaxIdleConns(1)
	r := &raceStore{db: m.DB, clock: new(atomic.Int64), base: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	var err error
	if walk == "" {
		ms, err := mysqlstore.New(one, store.Config{Now: r.now})
		if err != nil {
			t.Fatal(err)
		}
		r.s = ms.Store
	} else if r.s, err = sqlq.New(one, withWalk(t, walk), store.Config{Now: r.now}); err != nil {
		t.Fatal(err)
	}
	zdb := dbtest.Open(t, m.URL)
	zdb.SetMaxOpenConns(1)
	zdb.SetMaxIdleConns(1)
	if r.zombie, err = mysqlstore.New(zdb, store.Config{Now: r.now}); err != nil {
		t.Fatal(err)
	}
	return r
}

func connectionID(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var id int64
	if err := db.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
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

// lockWaiting reports whether the transaction of connection id waits for a
// row lock. It reads SHOW ENGINE INNODB STATUS: MariaDB's
// information_schema.INNODB_TRX leaves out transactions that have not yet
// been given an id, as an autocommit UPDATE waiting for its first row is.
func lockWaiting(ctx context.Context, t *testing.T, db *sql.DB, id int64) bool {
	t.Helper()
	var typ, name, status string
	if err := db.QueryRowContext(ctx, "SHOW ENGINE INNODB STATUS").Scan(&typ, &name, &status); err != nil {
		t.Fatalf("innodb status: %v", err)
	}
	thread := fmt.Sprintf(" thread id %d,", id) // "MariaDB thread id", "MySQL thread id"
	for _, trx := range strings.Split(status, "---TRANSACTION ")[1:] {
		if strings.Contains(trx, thread) {
			return strings.Contains(trx, "\nLOCK WAIT ")
		}
	}
	return false
}

// waitLockWait waits until the transaction of connection id waits for a row
// lock.
func waitLockWait(ctx context.Context, t *testing.T, db *sql.DB, id int64, what string) {
	t.Helper()
	for {
		if lockWaiting(ctx, t, db, id) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(time.Millisecond):
		}
	}
}

// zombieDoneOrWaiting waits until the zombie's change returned (true, and its
// error) or waits for a row lock (false).
func zombieDoneOrWaiting(ctx context.Context, t *testing.T, r *raceStore, zombied <-chan error) (bool, error) {
	t.Helper()
	for {
		select {
		case err := <-zombied:
			return true, err
		default:
		}
		if lockWaiting(ctx, t, r.db, r.zombieID) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for the zombie")
		case err := <-zombied:
			return true, err
		case <-time.After(time.Millisecond):
		}
	}
}

// outOfOrder reports each event leased by owner while an earlier event of its
// record is unfinished and not leased by owner.
func outOfOrder(t *testing.T, db *sql.DB, owner string) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `
SELECT l.Id, e.Id, e.Status FROM _System_IntegrationOutbound l
JOIN _System_IntegrationOutbound e
  ON e.Destination = l.Destination AND e.ObjectType = l.ObjectType AND e.RecordID = l.RecordID AND e.Lane < l.Lane
WHERE l.Status = 'processing' AND l.LeaseOwner = ?
  AND e.Status IN ('pending', 'processing') AND NOT (e.LeaseOwner <=> ?)
ORDER BY l.Lane, e.Lane`, owner, owner)
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

// zombieCase is what the zombie does to which of the three events of record
// A it holds, and which of A's events (by index; 3 is the producer's) the
// claim must lease if the zombie's change commits first.
type zombieCase struct {
	name  string
	event int // 0: the head, 1: the middle one
	do    func(ctx context.Context, q store.OutboundRepository, l store.Lease) error
	claim []int
}

var (
	release = func(ctx context.Context, q store.OutboundRepository, l store.Lease) error {
		return q.Release(ctx, time.Hour, l)
	}
	releaseNow = func(ctx context.Context, q store.OutboundRepository, l store.Lease) error {
		return q.Release(ctx, 0, l)
	}
	backoff = func(ctx context.Context, q store.OutboundRepository, l store.Lease) error {
		_, err := q.IncrementRetry(ctx, l, "zombie", time.Hour)
		return err
	}
	complete = func(ctx context.Context, q store.OutboundRepository, l store.Lease) error {
		return q.Complete(ctx, l)
	}
	deadLetter = func(ctx context.Context, q store.OutboundRepository, l store.Lease) error {
		return q.Fail(ctx, l, "zombie")
	}
)

// claim is what the claim must lease if the zombie's change succeeded, that is
// committed before the claim locked the zombie's event. A follower the zombie
// delays stops the record after the head; one it releases without delay is
// leased again; one it completes or dead-letters is skipped. A head the
// zombie delays blocks the whole record; one it completes or dead-letters
// leaves event 1 the head.
//
// The test means the zombie to run while the claim waits in its follower
// walk, where the claim holds the head (and, since the fix, the followers it
// passed): then the zombie's change of the head waits for the claim and finds
// its lease lost, and the claim leases the whole record. But a head change
// can also commit first: the claim's transaction is retried on a deadlock or
// lock wait timeout (sqlq's inTx), which releases the head, and the zombie's
// change, waiting for it, commits before the retry picks its head. The
// zombie's wait may then be too short for zombieDoneOrWaiting to see. So the
// test decides the expected lease from the zombie's result (its change
// applied, or its lease lost), not from what it saw, and checks per-record
// order and that the database leased the claim what it returned.
var zombieCases = []zombieCase{
	{"head released with a delay", 0, release, nil},
	{"head in backoff", 0, backoff, nil},
	{"head completed", 0, complete, []int{1, 2, 3}},
	{"head dead-lettered", 0, deadLetter, []int{1, 2, 3}},
	{"follower released with a delay", 1, release, []int{0}},
	{"follower released", 1, releaseNow, []int{0, 1, 2, 3}},
	{"follower in backoff", 1, backoff, []int{0}},
	{"follower completed", 1, complete, []int{0, 2, 3}},
	{"follower dead-lettered", 1, deadLetter, []int{0, 2, 3}},
}

// runZombie sets up record A with three events leased by a zombie whose lease
// expired and a producer's uncommitted fourth, starts a claim, waits until its
// follower walk waits for the producer's row, runs the zombie's change (which
// may itself wait for the claim), commits the producer, and returns A's events
// the claim leased, those it should have and the violations of per-record
// order and of the claim's lease.
func runZombie(t *testing.T, zc zombieCase, walk string) (got, want, bad []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := newRaceStore(t, walk)
	q := r.s.Outbound()
	enqueue := func(tx store.DBTX) string {
		t.Helper()
		r.clock.Add(int64(time.Millisecond))
		res, err := q.EnqueueTx(ctx, tx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts",
			RecordID: "A", EventType: "update", Payload: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	// Another destination's events in progress, so that the zombie's
	// statements plan as on a busy table: by primary key from their list of
	// leases, locking only the events they name. (On a near-empty table they
	// scan the processing events, and wait for the claim's head.)
	if err := storetest.FillOutbound(ctx, r.s, "other", "o", 2000, r.base); err != nil {
		t.Fatal(err)
	}
	if _, err := r.db.ExecContext(ctx, `UPDATE _System_IntegrationOutbound SET Status = 'processing',
		LeaseOwner = 'other', LeaseExpiresDate = '2030-01-01' WHERE Destination = 'other'`); err != nil {
		t.Fatal(err)
	}
	if err := storetest.Analyze(ctx, r.s); err != nil {
		t.Fatal(err)
	}
	var a []string
	for range 3 {
		a = append(a, enqueue(r.db))
	}
	held, err := q.Claim(ctx, claimParams("zombie"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids(held), ",") != strings.Join(a, ",") {
		t.Fatalf("the zombie's claim got %v, want %v", ids(held), a)
	}
	r.clock.Add(int64(2 * time.Minute)) // the zombie's leases expire

	producer, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Rollback()
	a = append(a, enqueue(producer))

	type result struct {
		evs []store.OutboundEvent
		err error
	}
	// Each store's one connection, as it is now (a bad connection is
	// replaced).
	r.connID, r.zombieID = connectionID(t, r.s.DB()), connectionID(t, r.zombie.DB())
	claimed := make(chan result, 1)
	go func() {
		p := claimParams("claimer")
		p.Limit = 1
		evs, err := q.Claim(ctx, p)
		claimed <- result{evs, err}
	}()
	waitLockWait(ctx, t, r.db, r.connID, "the claim's follower walk behind the producer")

	zombied := make(chan error, 1)
	go func() { zombied <- zc.do(ctx, r.zombie.Outbound(), held[zc.event].Lease()) }()
	zombieFirst, zerr := zombieDoneOrWaiting(ctx, t, r, zombied)
	if err := producer.Commit(); err != nil {
		t.Fatal(err)
	}
	res := <-claimed
	if res.err != nil {
		t.Fatalf("claim: %v", res.err)
	}
	if !zombieFirst {
		zerr = <-zombied
	}
	var wantIdx []int
	switch {
	case zerr == nil:
		// The zombie's change committed before the claim locked its event:
		// while the claim waited in its walk (a follower), or before the
		// claim's last attempt locked its head.
		t.Logf("the zombie changed event %d before the claim locked it (seen waiting: %v)", zc.event, !zombieFirst)
		wantIdx = zc.claim
	case errors.Is(zerr, store.ErrLeaseLost):
		// The claim held the zombie's event: the zombie changes it after
		// the claim, and finds it claimed again.
		t.Logf("the zombie waited for the claim, which held event %d", zc.event)
		wantIdx = []int{0, 1, 2, 3}
	default:
		t.Fatalf("zombie: %v", zerr)
	}
	for _, e := range res.evs {
		got = append(got, e.ID)
	}
	for _, i := range wantIdx {
		want = append(want, a[i])
	}
	bad = outOfOrder(t, r.db, "claimer")
	// Nothing leased unseen: A's events the database has leased to the
	// claim are the ones it returned. (An event the zombie finished and the
	// claim leased again is in got and not in want.)
	if leased := leasedTo(t, r.db, "claimer"); strings.Join(leased, ",") != strings.Join(got, ",") {
		bad = append(bad, fmt.Sprintf("the claim returned %v, the database leased it %v", got, leased))
	}
	return got, want, bad
}

// leasedTo returns record A's events leased to owner, in record order.
func leasedTo(t *testing.T, db *sql.DB, owner string) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT Id FROM _System_IntegrationOutbound
WHERE Destination = 'hubspot' AND RecordID = 'A' AND Status = 'processing' AND LeaseOwner = ? ORDER BY Lane`, owner)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestClaimZombieRace forces each zombie case into a claim's follower walk
// and requires per-record order, the claim's lease as it returned it, and
// exactly the events the record's state allows after the zombie's change or
// the claim, whichever committed first.
func TestClaimZombieRace(t *testing.T) {
	for _, zc := range zombieCases {
		t.Run(zc.name, func(t *testing.T) {
			got, want, bad := runZombie(t, zc, "")
			if len(bad) > 0 {
				t.Errorf("per-record order broken: %v", bad)
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("claim got %v, want %v", got, want)
			}
		})
	}
}

// pendingFirstWalk is ClaimLockFollowers before the fix: one scan of the open
// index, the pending followers before the processing ones.
const pendingFirstWalk = `SELECT STRAIGHT_JOIN f.Id, f.Lane, h.Id, {{template "due"}}
FROM {{template "ids"}} JOIN {{.Table}} h ON h.Id = j.Id
JOIN {{.Table}} f FORCE INDEX ({{.OpenIndex}}) ON {{same . "f" "h"}} AND f.Status IN ('pending', 'processing')
    AND f.Lane > h.Lane
ORDER BY h.Id, f.Lane
FOR UPDATE`

// withWalk returns the backend's dialect (its settings as mysqlstore.go sets
// them, its sql directory) with ClaimLockFollowers replaced by walk.
func withWalk(t *testing.T, walk string) sqlq.Dialect {
	t.Helper()
	files := fstest.MapFS{}
	err := fs.WalkDir(os.DirFS("."), "sql", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		files[path] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	files["sql/ClaimLockFollowers.sql"] = &fstest.MapFile{Data: []byte(walk)}
	return sqlq.Dialect{Name: store.MySQL, Queries: files, Mode: sqlq.ClaimLockThenUpdate,
		ClaimTx: &sql.TxOptions{Isolation: sql.LevelReadCommitted}}
}

// TestClaimZombieRaceControl is TestClaimZombieRace's negative control: with
// the walk before the fix (pendingFirstWalk), the same interleavings must
// lease out of order exactly where the zombie moves the follower from
// processing to pending, so the test forces the race the fix closes.
func TestClaimZombieRaceControl(t *testing.T) {
	breaks := []string{"follower released with a delay", "follower released", "follower in backoff"}
	for _, zc := range zombieCases {
		t.Run(zc.name, func(t *testing.T) {
			_, _, bad := runZombie(t, zc, pendingFirstWalk)
			if slices.Contains(breaks, zc.name) && len(bad) == 0 {
				t.Errorf("the pending-first walk kept the order; the test does not force the race")
			}
			if !slices.Contains(breaks, zc.name) && len(bad) > 0 {
				t.Errorf("per-record order broken: %v", bad)
			}
		})
	}
}
