package links_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/store"
)

// TestConcurrentLinks interleaves two writers of one link by hand, as the
// SyncWorker (LinkTx, inside the transaction that applies a HubSpot change
// matched by email) and the outbound worker (LinkMany and PushedMany, after
// HubSpot created the object) do: the first holds its write uncommitted while
// the second writes, then commits. The same local record and external id
// written twice is one link, never an error, whichever side is first; an
// external id taken by another record is ErrConflict, not a database error,
// and links nothing.
func TestConcurrentLinks(t *testing.T) {
	type writer struct {
		name string
		link func(ctx context.Context, l *links.Links, tx *sql.Tx, rec, ext string) error
	}
	linkTx := func(ctx context.Context, l *links.Links, tx *sql.Tx, rec, ext string) error {
		return l.LinkTx(ctx, tx, "hubspot", "contacts", rec, ext)
	}
	linkManyTx := func(ctx context.Context, l *links.Links, tx *sql.Tx, rec, ext string) error {
		return l.LinkManyTx(ctx, tx, "hubspot", "contacts", map[string]string{rec: ext})
	}
	pushedManyTx := func(ctx context.Context, l *links.Links, tx *sql.Tx, rec, ext string) error {
		return l.PushedManyTx(ctx, tx, "hubspot", "contacts", []links.Pushed{{RecordID: rec, ExternalID: ext, Version: 1, Fields: map[string]any{"email": "a@example.com"}}})
	}
	writers := []writer{{"Link", linkTx}, {"LinkMany", linkManyTx}, {"PushedMany", pushedManyTx}}

	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		st := newStore(t, d)
		l := links.New(st)
		db := st.DB()
		n := 0
		for _, first := range writers {
			for _, second := range writers {
				for _, other := range []bool{false, true} {
					name := first.name + " then " + second.name
					if other {
						name += " of another record"
					}
					n++
					rec, ext := fmt.Sprintf("r%d", n), fmt.Sprintf("%d", 100+n)
					t.Run(name, func(t *testing.T) {
						ctx := context.Background()
						firstRec := rec
						if other {
							firstRec = rec + "-other"
						}
						tx1, err := db.BeginTx(ctx, nil)
						if err != nil {
							t.Fatal(err)
						}
						defer tx1.Rollback() //nolint:errcheck // after Commit, a no-op
						if err := first.link(ctx, l, tx1, firstRec, ext); err != nil {
							t.Fatalf("first writer: %v", err)
						}
						if d == store.SQLite {
							// One writer at a time: the second begins once the
							// first has committed.
							if err := tx1.Commit(); err != nil {
								t.Fatal(err)
							}
							err = inTx(ctx, db, func(tx *sql.Tx) error { return second.link(ctx, l, tx, rec, ext) })
						} else {
							done := make(chan error, 1)
							session := make(chan int64, 1)
							go func() {
								done <- inTx(ctx, db, func(tx *sql.Tx) error {
									session <- sessionID(ctx, d, tx)
									return second.link(ctx, l, tx, rec, ext)
								})
							}()
							waitLockWait(t, d, db, testwait.Recv(t, "the second writer's session", session), done)
							if err := tx1.Commit(); err != nil {
								t.Fatal(err)
							}
							err = testwait.Recv(t, "the second writer", done)
						}
						owner, ok, lerr := l.LookupRecord(ctx, "hubspot", "contacts", ext)
						if lerr != nil || !ok || owner != firstRec {
							t.Fatalf("%s is linked to %q, %v, %v; want %s", ext, owner, ok, lerr, firstRec)
						}
						if !other {
							if err != nil {
								t.Fatalf("second writer of the same link: %v; want nil (idempotent)", err)
							}
							return
						}
						if !errors.Is(err, links.ErrConflict) {
							t.Fatalf("second writer for another record: %v; want ErrConflict", err)
						}
						if got, ok, err := l.Lookup(ctx, "hubspot", "contacts", rec); ok || err != nil {
							t.Fatalf("%s is linked to %q, %v after a conflict; want no link", rec, got, err)
						}
					})
				}
			}
		}
	})
}

// sessionID returns the database session of tx (0 on SQLite).
func sessionID(ctx context.Context, d store.Dialect, tx *sql.Tx) int64 {
	var q string
	switch d {
	case store.Postgres:
		q = "SELECT pg_backend_pid()"
	case store.MySQL:
		q = "SELECT CONNECTION_ID()"
	default:
		return 0
	}
	var id int64
	if err := tx.QueryRowContext(ctx, q).Scan(&id); err != nil {
		return -1
	}
	return id
}

// waitLockWait waits until session waits for a row lock (the first writer's):
// on MySQL, until it runs a statement on hubsync_link.
// SQLite admits one writer: the second transaction waits to begin, or begins
// after the first commits; either way the writes are serialized, so there is
// nothing to wait for.
func waitLockWait(t *testing.T, d store.Dialect, db *sql.DB, session int64, done chan error) {
	t.Helper()
	var q string
	switch d {
	case store.Postgres:
		q = "SELECT COUNT(*) FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'"
	case store.MySQL:
		// INNODB_TRX does not always show the wait; a statement on
		// hubsync_link still running is waiting for the first writer, as
		// nothing else holds it up.
		q = `SELECT COUNT(*) FROM information_schema.PROCESSLIST
			WHERE ID = ? AND COMMAND = 'Query' AND INFO LIKE '%hubsync_link%'`
	default:
		return
	}
	if session < 0 {
		t.Fatal("no session id of the second writer")
	}
	testwait.For(t, "the second writer to wait for the first", func() bool {
		var n int
		if err := db.QueryRow(q, session).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 && len(done) > 0 {
			err := <-done
			t.Fatalf("the second writer finished without waiting for the first: %v", err)
		}
		return n > 0
	})
}
