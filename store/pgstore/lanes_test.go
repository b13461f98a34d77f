package pgstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/migrate"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/pgstore"
	"github.com/hubsync/hubsync/store/storetest"
)

// lanesFromEvents recomputes the outbound lanes from the events alone (the
// definition in migration 018, with Leased from migration 023: the record has
// an event under a lease, live or expired; and Claimed from migration 024:
// Leased, or the head was leased before, Attempt > 0) and reports every
// difference from the lanes table the triggers kept.
func lanesFromEvents(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `
WITH want AS (
    SELECT h.Destination, h.ObjectType, h.RecordID, h.Id AS head_id,
        COALESCE(GREATEST(CASE WHEN h.Status = 'pending' THEN h.NextAttemptDate END,
                          lz.until + interval '1 microsecond'), h.NextAttemptDate) AS due,
        lz.until IS NOT NULL AS leased,
        lz.until IS NOT NULL OR h.Attempt > 0 AS claimed
    FROM (SELECT DISTINCT ON (Destination, ObjectType, RecordID) Destination, ObjectType, RecordID, Id, Status, NextAttemptDate, Attempt
          FROM _System_IntegrationOutbound WHERE Status IN ('pending', 'processing')
          ORDER BY Destination, ObjectType, RecordID, Lane) h
    LEFT JOIN (SELECT Destination, ObjectType, RecordID, MAX(LeaseExpiresDate) AS until FROM _System_IntegrationOutbound
               WHERE LeaseExpiresDate IS NOT NULL GROUP BY Destination, ObjectType, RecordID) lz
      ON lz.Destination = h.Destination AND lz.ObjectType = h.ObjectType AND lz.RecordID = h.RecordID
)
SELECT COALESCE(w.RecordID, l.RecordID), COALESCE(w.head_id, '-'), COALESCE(l.HeadId, '-'),
    COALESCE(w.due::text, '-'), COALESCE(l.DueDate::text, '-'),
    COALESCE(w.leased::text, '-'), COALESCE(l.Leased::text, '-'),
    COALESCE(w.claimed::text, '-'), COALESCE(l.Claimed::text, '-')
FROM want w FULL JOIN hubsync_lane_outbound l
  ON l.Destination = w.Destination AND l.ObjectType = w.ObjectType AND l.RecordID = w.RecordID
WHERE w.head_id IS DISTINCT FROM l.HeadId OR w.due IS DISTINCT FROM l.DueDate OR w.leased IS DISTINCT FROM l.Leased
   OR w.claimed IS DISTINCT FROM l.Claimed`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var rec, wantHead, gotHead, wantDue, gotDue, wantLeased, gotLeased, wantClaimed, gotClaimed string
		if err := rows.Scan(&rec, &wantHead, &gotHead, &wantDue, &gotDue, &wantLeased, &gotLeased, &wantClaimed, &gotClaimed); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("record %s: lane head %s due %s leased %s claimed %s, events say head %s due %s leased %s claimed %s",
			rec, gotHead, gotDue, gotLeased, gotClaimed, wantHead, wantDue, wantLeased, wantClaimed))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func checkLanes(t *testing.T, db *sql.DB, step string) {
	t.Helper()
	if diff := lanesFromEvents(t, db); len(diff) > 0 {
		t.Fatalf("after %s the lanes disagree with the events:\n%v", step, diff)
	}
}

// TestLanesFollowEveryChange drives each operation that changes events of the
// outbound queue and checks after each that the lanes table is exactly what
// the events define: the triggers keep it, whoever writes, and the claim
// statement keeps the lanes of what it leased (migration 021).
func TestLanesFollowEveryChange(t *testing.T) {
	ctx := context.Background()
	var clock atomic.Int64
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return base.Add(time.Duration(clock.Load())) }
	s := newStore(t, store.Config{Now: now, Retry: store.RetryPolicy{MaxAttempts: 2}})
	db := s.DB()
	q := s.Outbound()
	var ids []string
	for i := range 30 {
		clock.Add(int64(time.Millisecond))
		r, err := q.Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts",
			RecordID: fmt.Sprintf("r%d", i%5), EventType: "update", Payload: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	checkLanes(t, db, "enqueue")
	claim := func(limit, per int) []store.OutboundEvent {
		t.Helper()
		evs, err := q.Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: limit, MaxPerRecord: per, LeaseDuration: time.Minute, Owner: "w"})
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	evs := claim(3, 2)
	if len(evs) != 6 {
		t.Fatalf("claimed %d events, want 6", len(evs))
	}
	checkLanes(t, db, "claim")
	if err := q.Complete(ctx, evs[0].Lease()); err != nil {
		t.Fatal(err)
	}
	checkLanes(t, db, "complete of a head, its follower still leased")
	if err := q.Release(ctx, time.Hour, evs[2].Lease(), evs[3].Lease()); err != nil {
		t.Fatal(err)
	}
	checkLanes(t, db, "release with a delay")
	if _, err := q.IncrementRetry(ctx, evs[4].Lease(), "boom", 0); err != nil {
		t.Fatal(err)
	}
	checkLanes(t, db, "increment retry")
	if err := q.Fail(ctx, evs[5].Lease(), "dead"); err != nil {
		t.Fatal(err)
	}
	checkLanes(t, db, "fail")
	if n, err := q.Requeue(ctx, evs[5].ID); err != nil || n != 1 {
		t.Fatalf("requeue: %d, %v", n, err)
	}
	checkLanes(t, db, "requeue")
	clock.Add(int64(2 * time.Minute)) // evs[1]'s lease expires
	again := claim(10, 100)
	checkLanes(t, db, "claim of expired leases and everything due")
	var ls []store.Lease
	for _, e := range again {
		ls = append(ls, e.Lease())
	}
	if err := q.Complete(ctx, ls...); err != nil {
		t.Fatal(err)
	}
	checkLanes(t, db, "complete of a batch")
	if _, err := q.Cleanup(ctx, now().Add(time.Hour), 7); err != nil {
		t.Fatal(err)
	}
	checkLanes(t, db, "cleanup")
	// Writes outside the store keep them too: a raw UPDATE and a TRUNCATE.
	if _, err := db.ExecContext(ctx, `UPDATE _System_IntegrationOutbound SET NextAttemptDate = NextAttemptDate + interval '1 day' WHERE Status = 'pending'`); err != nil {
		t.Fatal(err)
	}
	checkLanes(t, db, "a raw UPDATE")
	// A bulk load of an event under a lease gives its new lane Leased.
	if _, err := db.ExecContext(ctx, `INSERT INTO _System_IntegrationOutbound (Id, Destination, ObjectType, RecordID, EventType, Payload, Status,
    CreatedDate, LastModifiedDate, NextAttemptDate, LeaseOwner, LeaseExpiresDate, Attempt, Seq, Lane)
VALUES ('loaded', 'hubspot', 'contacts', 'r8', 'update', '{}', 'processing', $1, $1, $1, 'w', $2, 1, 1, 1)`, now(), now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	checkLanes(t, db, "a raw INSERT of a leased event")
	// And of a pending event leased before (a copy of a released one) gives
	// its new lane Claimed.
	if _, err := db.ExecContext(ctx, `INSERT INTO _System_IntegrationOutbound (Id, Destination, ObjectType, RecordID, EventType, Payload, Status,
    CreatedDate, LastModifiedDate, NextAttemptDate, Attempt, Seq, Lane)
VALUES ('reloaded', 'hubspot', 'contacts', 'r7', 'update', '{}', 'pending', $1, $1, $1, 2, 1, 1)`, now()); err != nil {
		t.Fatal(err)
	}
	checkLanes(t, db, "a raw INSERT of a pending event leased before")
	if _, err := q.Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: "r9",
		EventType: "update", Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM _System_IntegrationOutbound WHERE RecordID IN ('r0', 'r9') AND Status = 'pending'`); err != nil {
		t.Fatal(err)
	}
	checkLanes(t, db, "a raw DELETE of pending events")
	if _, err := db.ExecContext(ctx, `TRUNCATE _System_IntegrationOutbound`); err != nil {
		t.Fatal(err)
	}
	checkLanes(t, db, "TRUNCATE")
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM hubsync_lane_outbound`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("lanes after TRUNCATE: %d (%v), want 0", n, err)
	}
}

// TestLanesUnderConcurrentWriters runs enqueuers, claimers, completers and
// releasers at once on a few hot records, then checks that the lanes the
// triggers and the claims kept under that concurrency equal what the events
// define, and that every event can still be claimed and completed. Each
// worker keeps the leases of its last claim, so that the check also sees
// lanes that a claim wrote last.
func TestLanesUnderConcurrentWriters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newStore(t, store.Config{})
	q := s.Outbound()
	const records, workers, rounds = 8, 6, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers*2)
	var mu sync.Mutex
	var held []store.Lease
	for w := range workers {
		rng := rand.New(rand.NewPCG(uint64(w), 16))
		wg.Go(func() {
			for round := range rounds {
				if ctx.Err() != nil {
					return
				}
				if _, err := q.Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts",
					RecordID: fmt.Sprintf("c%d", rng.IntN(records)), EventType: "update", Payload: []byte(`{}`)}); err != nil {
					errs <- err
					return
				}
				evs, err := q.Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: 3, MaxPerRecord: 1 + rng.IntN(3), LeaseDuration: time.Minute, Owner: fmt.Sprint("w", w)})
				if err != nil {
					errs <- err
					return
				}
				if round == rounds-1 {
					mu.Lock()
					for _, e := range evs {
						held = append(held, e.Lease())
					}
					mu.Unlock()
					return
				}
				for _, e := range evs {
					var err error
					if rng.IntN(4) == 0 {
						err = q.Release(ctx, 0, e.Lease())
					} else {
						err = q.Complete(ctx, e.Lease())
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkLanes(t, s.DB(), "concurrent enqueue, claim, complete and release")
	if len(held) == 0 {
		t.Fatal("no worker's last claim leased anything: the check saw no lane a claim wrote last")
	}
	if err := q.Complete(ctx, held...); err != nil {
		t.Fatal(err)
	}
	checkLanes(t, s.DB(), "the complete of the last claims")
	drain(t, s)
	checkLanes(t, s.DB(), "the drain")
}

// drain claims and completes until nothing is left pending or processing.
func drain(t *testing.T, s *pgstore.Store) {
	t.Helper()
	ctx := context.Background()
	for range 1000 {
		evs, err := s.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: 100, LeaseDuration: time.Minute, Owner: "drain"})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		var ls []store.Lease
		for _, e := range evs {
			ls = append(ls, e.Lease())
		}
		if err := s.Outbound().Complete(ctx, ls...); err != nil {
			t.Fatal(err)
		}
	}
	var open int
	if err := s.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM _System_IntegrationOutbound WHERE Status IN ('pending', 'processing')`).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if open != 0 {
		t.Fatalf("%d events left unfinished after the drain: some record's lane was lost", open)
	}
}

// triggerRecomputes reports whether a lane UPDATE trigger recomputed lanes
// among the logged statements: its statements read the changed rows
// (new_rows) and are logged by auto_explain as nested statements.
func triggerRecomputes(stmts []explainedStatement) bool {
	for _, e := range stmts {
		if strings.Contains(e.QueryText, "new_rows") {
			return true
		}
	}
	return false
}

// TestClaimKeepsItsLanes checks that the claim statement moves the lanes of
// the records it leased itself (migration 021) and that the UPDATE trigger
// skips them: on a backlog without statistics, no trigger statement runs in
// the claim, the lanes are updated by one probe of their primary key per
// claimed record, and they equal what the events define. Then, on the same
// connection, a plain UPDATE outside the claim function must still recompute
// its lanes: the function's hubsync.lanes_kept ends with the function.
func TestClaimKeepsItsLanes(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tdb := dbtest.Migrated(t, store.Postgres)
	noAutovacuum(t, tdb.DB)
	cfg := store.Config{Now: func() time.Time { return base.Add(time.Hour) }}
	filler, err := pgstore.New(tdb.DB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := storetest.FillOutboundRecords(ctx, filler, "hubspot", "s", 600, 200, base); err != nil {
		t.Fatal(err)
	}
	s, logged := autoExplained(t, tdb.URL, cfg)
	evs, err := s.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: 100, LeaseDuration: time.Minute, Owner: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 300 {
		t.Fatalf("claimed %d events, want 300 (100 records × 3 events)", len(evs))
	}
	stmts := logged()
	if triggerRecomputes(stmts) {
		t.Errorf("the lane UPDATE trigger recomputed the claim's lanes; the claim function must keep them itself (SET hubsync.lanes_kept)")
	}
	plan := claimPlan(t, stmts)
	t.Logf("claim plan:\n%s", plan.shape())
	var probes []planNode
	plan.walk(func(n planNode) {
		if n.NodeType == "ModifyTable" && n.Operation == "Update" && n.Relation == "hubsync_lane_outbound" {
			n.walk(func(c planNode) {
				if c.Relation == "hubsync_lane_outbound" && c.NodeType != "ModifyTable" {
					probes = append(probes, c)
				}
			})
		}
	})
	if len(probes) != 1 || probes[0].NodeType != "Index Scan" || probes[0].Index != "hubsync_lane_outbound_pkey" ||
		probes[0].ActualLoops != 1 || probes[0].ActualRows != 100 {
		t.Errorf("the claim's lane update is not one LaneKey probe per claimed record (one primary key scan of 100 lanes); plan:\n%s", plan.shape())
	}
	checkLanes(t, tdb.DB, "a claim")

	var kept string
	if err := s.DB().QueryRowContext(ctx, `SELECT COALESCE(current_setting('hubsync.lanes_kept', true), '')`).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept == "on" {
		t.Fatalf("hubsync.lanes_kept is still on after the claim function returned")
	}
	if _, err := s.DB().ExecContext(ctx, `UPDATE _System_IntegrationOutbound SET NextAttemptDate = NextAttemptDate + interval '1 day' WHERE Status = 'pending'`); err != nil {
		t.Fatal(err)
	}
	if !triggerRecomputes(logged()) {
		t.Errorf("a plain UPDATE after a claim did not recompute its lanes")
	}
	checkLanes(t, tdb.DB, "a plain UPDATE on the claim's connection")
}

// TestProcessedInboundMakesNoLane checks that an inbound event enqueued
// already processed (an echo the receiver recognised) makes no record lane,
// alone or in a batch, and never becomes the head of its record's lane: the
// insert trigger of migration 018 keeps lanes for unfinished events only.
func TestProcessedInboundMakesNoLane(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, store.Config{})
	q := s.Inbound()
	ev := func(key, record string, status store.Status) store.InboundEvent {
		return store.InboundEvent{Source: "hubspot", ExternalID: record, ObjectType: "contacts", EventType: store.EventUpdate,
			Payload: []byte(`{}`), IdempotencyKey: key, QueueState: store.QueueState{Status: status}}
	}
	if _, err := q.Enqueue(ctx, ev("x-1", "X", store.StatusProcessed)); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, ev("w-1", "W", store.StatusProcessed)); err != nil {
		t.Fatal(err)
	}
	res, err := q.EnqueueBatch(ctx, []store.InboundEvent{
		ev("y-1", "Y", store.StatusProcessed), ev("z-1", "Z", ""), ev("z-2", "Z", store.StatusProcessed), ev("w-2", "W", ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.DB().QueryContext(ctx, `SELECT ExternalID, HeadId FROM hubsync_lane_inbound ORDER BY ExternalID`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var rec, head string
		if err := rows.Scan(&rec, &head); err != nil {
			t.Fatal(err)
		}
		got[rec] = head
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"W": res[3].ID, "Z": res[1].ID}
	if !maps.Equal(got, want) {
		t.Fatalf("inbound lanes (record → head) = %v, want %v: records X and Y have only processed events, W and Z one pending head each", got, want)
	}
}

// TestMigrationMarksLeasedLanes upgrades a database with events under way
// from migration 022 to 023: the lanes of the records that hold a lease, live
// or expired, must come out Leased (the migration's backfill), and the rest
// not, exactly as the events define them.
func TestMigrationMarksLeasedLanes(t *testing.T) {
	ctx := context.Background()
	tdb := migratedThrough(t, 22)
	// At 022: five records, three of them claimed, one of those since
	// expired; a record whose head was released keeps a leased follower.
	clock := storetest.NewClock(time.Time{})
	s, err := pgstore.New(tdb.DB, store.Config{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	q := s.Outbound()
	for i := range 5 {
		for range 2 {
			if _, err := q.Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts",
				RecordID: fmt.Sprintf("r%d", i), EventType: "update", Payload: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Millisecond)
		}
	}
	claim := func(limit int, lease time.Duration) []store.OutboundEvent {
		t.Helper()
		evs, err := q.Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: limit, LeaseDuration: lease, Owner: "w"})
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	if evs := claim(1, time.Second); len(evs) != 2 {
		t.Fatalf("fixture: claimed %v, want r0's two events", evs)
	}
	clock.Advance(time.Minute) // r0's lease expires
	evs := claim(2, time.Hour)
	if len(evs) != 4 {
		t.Fatalf("fixture: claimed %v, want r1's and r2's events", evs)
	}
	if err := q.Release(ctx, time.Hour, evs[0].Lease()); err != nil {
		t.Fatal(err)
	}

	m, err := migrate.New(tdb.DB, store.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	if done, err := m.Up(ctx); err != nil || len(done) == 0 || done[0] != 23 {
		t.Fatalf("Up from 022 applied %v (%v), want 023 first", done, err)
	}
	checkLanes(t, tdb.DB, "the migration to 023")
	var leased int
	if err := tdb.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM hubsync_lane_outbound WHERE Leased`).Scan(&leased); err != nil || leased != 3 {
		t.Fatalf("%d lanes Leased after the migration (%v), want 3 (r0 expired, r1, r2)", leased, err)
	}
}

// migratedThrough returns a new PostgreSQL database with the migrations up to
// and including version last applied, and recorded as the migrator records
// them, so that migrate.Up applies the next ones.
func migratedThrough(t *testing.T, last int) *dbtest.DB {
	t.Helper()
	ctx := context.Background()
	tdb := dbtest.New(t, store.Postgres)
	all, err := migrate.Migrations(store.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tdb.DB.ExecContext(ctx, `CREATE TABLE hubsync_migration (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, mg := range all {
		if mg.Version > last {
			break
		}
		for _, stmt := range migrate.SplitStatements(mg.SQL) {
			if _, err := tdb.DB.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("apply %03d_%s: %v", mg.Version, mg.Name, err)
			}
		}
		if _, err := tdb.DB.ExecContext(ctx, `INSERT INTO hubsync_migration VALUES ($1, $2, 'test')`, mg.Version, mg.Name); err != nil {
			t.Fatal(err)
		}
	}
	return tdb
}

// TestMigrationMarksClaimedLanes upgrades a database with events under way
// from migration 023 to 024: the lanes of the records claimed before (a
// lease, live or expired, or a head leased before: released with a delay, in
// backoff, requeued from the dead letters) must come out Claimed (the
// migration's backfill), and the lanes of records never claimed not, exactly
// as the events define them.
func TestMigrationMarksClaimedLanes(t *testing.T) {
	ctx := context.Background()
	tdb := migratedThrough(t, 23)
	clock := storetest.NewClock(time.Time{})
	s, err := pgstore.New(tdb.DB, store.Config{Now: clock.Now, Retry: store.RetryPolicy{MaxAttempts: 3}})
	if err != nil {
		t.Fatal(err)
	}
	q := s.Outbound()
	// At 023: seven records of one event each, r0 first.
	for i := range 7 {
		if _, err := q.Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts",
			RecordID: fmt.Sprintf("r%d", i), EventType: "update", Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Millisecond)
	}
	evs, err := q.Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: 5, LeaseDuration: time.Second, Owner: "w"})
	if err != nil || len(evs) != 5 || evs[4].RecordID != "r4" {
		t.Fatalf("fixture: claimed %v (%v), want r0 to r4", evs, err)
	}
	// r0's lease will expire; r1 stays leased; r2 is released with a delay,
	// r3 in backoff, r4 failed and requeued; r5 and r6 were never claimed.
	if err := q.Release(ctx, time.Hour, evs[2].Lease()); err != nil {
		t.Fatal(err)
	}
	if _, err := q.IncrementRetry(ctx, evs[3].Lease(), "HubSpot 502", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := q.Fail(ctx, evs[4].Lease(), "HubSpot 400"); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Requeue(ctx, evs[4].ID); err != nil || n != 1 {
		t.Fatalf("fixture: requeue %d (%v)", n, err)
	}
	if err := q.ExtendLease(ctx, time.Hour, evs[1].Lease()); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)

	m, err := migrate.New(tdb.DB, store.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	if done, err := m.Up(ctx); err != nil || len(done) == 0 || done[0] != 24 {
		t.Fatalf("Up from 023 applied %v (%v), want 024 first", done, err)
	}
	checkLanes(t, tdb.DB, "the migration to 024")
	var claimed []string
	rows, err := tdb.DB.QueryContext(ctx, `SELECT RecordID FROM hubsync_lane_outbound WHERE Claimed ORDER BY RecordID`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		claimed = append(claimed, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"r0", "r1", "r2", "r3", "r4"}; !slices.Equal(claimed, want) {
		t.Fatalf("lanes Claimed after the migration: %v, want %v (r5 and r6 were never claimed)", claimed, want)
	}
}

// TestLaneSurvivesRepeatableReadComplete: a caller completes an event in its
// own REPEATABLE READ transaction while another event of the record is
// enqueued and committed after that transaction's snapshot. The complete's
// lane recompute cannot see the new event in its snapshot, so it must fail
// (a serialization failure the caller retries) rather than delete the
// record's lane and leave the new event where no claim finds it. The no-op
// update of the lane by the insert trigger is what makes it fail; locking
// the lane without writing it (a migration tried and reverted in the
// thirteenth session) let the complete commit and lost the lane.
func TestLaneSurvivesRepeatableReadComplete(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, store.Config{})
	db := s.DB()
	q := s.Outbound()
	enqueue := func() {
		t.Helper()
		if _, err := q.Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: "R",
			EventType: store.EventUpdate, Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	enqueue()
	evs, err := q.Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: 10, LeaseDuration: time.Minute, Owner: "w"})
	if err != nil || len(evs) != 1 {
		t.Fatalf("claim: %d events, %v; want 1", len(evs), err)
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // committed below when the complete succeeds
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM _System_IntegrationOutbound").Scan(&n); err != nil {
		t.Fatal(err) // takes the transaction's snapshot
	}
	enqueue()
	completed := false
	if err := q.CompleteTx(ctx, tx, evs[0].Lease()); err == nil {
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		completed = true
	} else if !strings.Contains(err.Error(), "40001") {
		t.Fatalf("complete in a REPEATABLE READ transaction: %v; want success or a serialization failure (40001)", err)
	}
	checkLanes(t, db, "a REPEATABLE READ complete beside a new event of its record")
	if !completed {
		return // the first event keeps its lease; the lanes agree with the events
	}
	next, err := q.Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: 10, LeaseDuration: time.Minute, Owner: "w2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(next) == 0 {
		t.Fatal("the first event is complete, and the record's new event is not claimable")
	}
}
