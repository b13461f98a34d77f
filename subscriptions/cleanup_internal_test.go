package subscriptions

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

// TestCleanupPlans: a batch of the cleanup reads the requests of one status
// past the cutoff through subscription_requests_settled (migration 033) in
// its order, with one probe of subscription_requests_contact per request
// for its contact's newest, and deletes by primary key. Without the index
// every batch read and sorted the whole table; with the ids in IN
// (subquery), MariaDB read the whole table to delete a batch. MySQL/MariaDB
// plans with the statistics of the empty table (as after a fast fill),
// the others with fresh ones.
func TestCleanupPlans(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		db := dbtest.Migrated(t, d)
		if d == store.MySQL {
			dbtest.FreezeEmptyStatistics(t, db.DB, "subscription_requests")
		}
		base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		tx, err := db.DB.Begin()
		if err != nil {
			t.Fatal(err)
		}
		ins := dialectsql.Rebind(d, `INSERT INTO subscription_requests (id, brand_id, product_id, contact_key, desired_state, mapping_version,
    idempotency_key, request_hash, sync_status, sync_detail, applied_sequence, created_at, updated_at)
VALUES (?, 'acme', 'news', ?, 'subscribed', 1, ?, 'h', ?, '', ?, ?, ?)`)
		statuses := []string{StatusSynced, StatusSuperseded, StatusPending, StatusFailed}
		for i := range 3000 {
			if _, err := tx.Exec(ins, fmt.Sprintf("r%05d", i), fmt.Sprintf("c%d@example.com", i%700), fmt.Sprint("k", i), statuses[i%4], i/700+1,
				dialectsql.Time(d, base), dialectsql.Time(d, base.Add(time.Duration(i)*time.Minute))); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		dbtest.RefreshStatistics(t, db.DB, d, "subscription_requests")
		q, err := dialectsql.Load(sqlFS, "sql", d)
		if err != nil {
			t.Fatal(err)
		}
		cut, after := dialectsql.Time(d, base.Add(2000*time.Minute)), dialectsql.Time(d, base.Add(time.Hour))
		sel := dbtest.Explain(t, db.DB, d, q.Get("request_cleanup_select"), StatusSynced, cut, after, after, "r00060", 100)
		del := dbtest.Explain(t, db.DB, d, q.Get("request_cleanup_delete"), `["r00001","r00005"]`, cut)
		var selWant, delWant []string
		switch d {
		case store.SQLite:
			selWant = []string{"SEARCH r USING INDEX subscription_requests_settled", "SEARCH n USING COVERING INDEX subscription_requests_contact"}
			delWant = []string{"SEARCH subscription_requests USING INDEX sqlite_autoindex_subscription_requests_1 (id=?)"}
		case store.Postgres:
			selWant = []string{"Index Scan using subscription_requests_settled", "using subscription_requests_contact"}
			delWant = []string{"Index Scan using subscription_requests_pkey"}
		case store.MySQL:
			selWant = []string{"| r | range |", "| subscription_requests_settled |", "| n | ref |", "| subscription_requests_contact |"}
			delWant = []string{"| r | eq_ref |", "| PRIMARY |"}
		}
		for _, w := range selWant {
			if !strings.Contains(sel, w) {
				t.Errorf("request_cleanup_select's plan does not say %q:\n%s", w, sel)
			}
		}
		for _, w := range delWant {
			if !strings.Contains(del, w) {
				t.Errorf("request_cleanup_delete's plan does not say %q:\n%s", w, del)
			}
		}
		for _, bad := range []string{"Seq Scan", "SCAN r", "TEMP B-TREE", "Sort", "filesort", "| ALL |"} {
			if strings.Contains(sel, bad) {
				t.Errorf("request_cleanup_select's plan reads the whole table or sorts (%q):\n%s", bad, sel)
			}
		}
	})
}

// TestCleanupDeleteChecksAgain: the delete of a batch deletes only what is
// still settled for good and past the cutoff, whatever ids it is given:
// the batch was chosen by an earlier statement.
func TestCleanupDeleteChecksAgain(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		st, s := migratedStore(t, d)
		ctx := context.Background()
		var ids []string
		for i := range 4 {
			r, err := s.Submit(ctx, Request{BrandID: "acme", ProductID: "news", ContactKey: "ada@example.com", DesiredState: StateSubscribed}, fmt.Sprint("k", i), 1)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, r.ID)
		}
		if err := s.SetStatus(ctx, ids[0], StatusFailed, "opted out"); err != nil {
			t.Fatal(err)
		}
		if err := s.SetStatus(ctx, ids[2], StatusSuperseded, ""); err != nil {
			t.Fatal(err)
		}
		// ids[1] is pending; ids[2] superseded but changed after the cutoff.
		cut := dialectsql.Time(d, st.Now().Add(-time.Hour))
		if n, err := s.cleanupDelete(ctx, ids[:3], cut); err != nil || n != 0 {
			t.Fatalf("cleanupDelete of a failed, a pending and a recent request = %d, %v; want none deleted", n, err)
		}
		// Past the cutoff, a failed and a pending request stay all the same.
		later := dialectsql.Time(d, st.Now().Add(time.Hour))
		if n, err := s.cleanupDelete(ctx, ids[:2], later); err != nil || n != 0 {
			t.Fatalf("cleanupDelete of a failed and a pending request past the cutoff = %d, %v; want none deleted", n, err)
		}
		if n, err := s.cleanupDelete(ctx, ids[2:3], later); err != nil || n != 1 {
			t.Fatalf("cleanupDelete of a superseded request past the cutoff = %d, %v; want it deleted", n, err)
		}
	})
}

// TestSubmitAfterItsKeyWasCleanedUp: the cleanup deletes the request
// holding a key between a retry's insert, which finds the key taken, and its
// read of that request. The key is free again, so the retry is a new
// request, not an error (before: "key … was taken, but no request holds it
// now", a 500).
func TestSubmitAfterItsKeyWasCleanedUp(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		st, s := migratedStore(t, d)
		ctx := context.Background()
		req := Request{BrandID: "acme", ProductID: "news", ContactKey: "ada@example.com", DesiredState: StateSubscribed}
		first, err := s.Submit(ctx, req, "k1", 1)
		if err != nil {
			t.Fatal(err)
		}
		deleted := false
		s.beforeReplay = func() {
			if deleted {
				return
			}
			deleted = true
			if _, err := st.DB().Exec(dialectsql.Rebind(d, "DELETE FROM subscription_requests WHERE id = ?"), first.ID); err != nil {
				t.Error(err)
			}
		}
		again, err := s.Submit(ctx, req, "k1", 1)
		if err != nil || !deleted || again.Replayed || again.ID == first.ID || again.AppliedSequence <= first.AppliedSequence {
			t.Fatalf("retry under a key whose request was deleted in between = %+v, %v (deleted %v); want a new request after %+v", again, err, deleted, first)
		}
		if got, err := s.Get(ctx, again.ID); err != nil || got.IdempotencyKey != "k1" {
			t.Fatalf("the new request %s = %+v, %v; want it stored under k1", again.ID, got, err)
		}
	})
}

// migratedStore returns the store of a migrated database of dialect d and
// its subscription store.
func migratedStore(t *testing.T, d store.Dialect) (store.Store, *Store) {
	t.Helper()
	st, err := hubsync.NewStore(dbtest.Migrated(t, d).DB, d, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return st, NewStore(st)
}
