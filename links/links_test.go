package links_test

import (
	"context"
	"errors"
	"github.com/hubsync/hubsync"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/store"
)

func newStore(t testing.TB, d store.Dialect) store.Store {
	t.Helper()
	db := dbtest.Migrated(t, d)
	st, err := hubsync.NewStore(db.DB, d, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestRelinkAfterConcurrentLink: a record that another writer linked after
// the caller's transaction began (its snapshot, on MySQL's REPEATABLE READ)
// is re-linked by LinkTx, as a record linked before it: the link it reads is
// the latest, not the snapshot's.
func TestRelinkAfterConcurrentLink(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		if d == store.SQLite {
			t.Skip("SQLite has one writer: no link is committed while a transaction writes")
		}
		st := newStore(t, d)
		l := links.New(st)
		ctx := context.Background()
		tx, err := st.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback() //nolint:errcheck // committed below
		// The transaction's first read takes its snapshot.
		if _, ok, err := l.LookupRecordTx(ctx, tx, "hubspot", "contacts", "e2"); ok || err != nil {
			t.Fatalf("owner of e2 = %v, %v; want none", ok, err)
		}
		if err := l.Link(ctx, "hubspot", "contacts", "r1", "e1"); err != nil {
			t.Fatal(err)
		}
		if err := l.LinkTx(ctx, tx, "hubspot", "contacts", "r1", "e2"); err != nil {
			t.Fatalf("re-link after a concurrent link: %v, want nil", err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if ext, _, err := l.Lookup(ctx, "hubspot", "contacts", "r1"); err != nil || ext != "e2" {
			t.Fatalf("link of r1 = %q, %v; want e2", ext, err)
		}
	})
}

// TestLinkNew: LinkNewTx links a record that has none in one insert, and
// tells an external id that belongs to another record, or a record that has
// another id after all, as ErrConflict without writing anything.
func TestLinkNew(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		st := newStore(t, d)
		l := links.New(st)
		ctx := context.Background()
		if err := l.LinkNewTx(ctx, st.DB(), "hubspot", "contacts", "r1", "101"); err != nil {
			t.Fatal(err)
		}
		if ext, ok, err := l.Lookup(ctx, "hubspot", "contacts", "r1"); !ok || err != nil || ext != "101" {
			t.Fatalf("lookup = %q %v %v; want 101", ext, ok, err)
		}
		if err := l.LinkNewTx(ctx, st.DB(), "hubspot", "contacts", "r2", "101"); !errors.Is(err, links.ErrConflict) {
			t.Fatalf("a new record on a linked external id: %v, want ErrConflict", err)
		}
		if err := l.LinkNewTx(ctx, st.DB(), "hubspot", "contacts", "r1", "102"); !errors.Is(err, links.ErrConflict) {
			t.Fatalf("a linked record as new: %v, want ErrConflict", err)
		}
		if err := l.LinkNewTx(ctx, st.DB(), "hubspot", "contacts", "r3", ""); !errors.Is(err, links.ErrInvalid) {
			t.Fatalf("an empty external id: %v, want ErrInvalid", err)
		}
		for rec, want := range map[string]string{"r1": "101", "r2": "", "r3": ""} {
			if ext, _, err := l.Lookup(ctx, "hubspot", "contacts", rec); err != nil || ext != want {
				t.Errorf("link of %s = %q, %v; want %q", rec, ext, err, want)
			}
		}
		if id, _, err := l.LookupRecord(ctx, "hubspot", "contacts", "102"); err != nil || id != "" {
			t.Errorf("102 belongs to %q, %v; want nobody", id, err)
		}
	})
}

func TestLinks(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		st := newStore(t, d)
		l := links.New(st)
		ctx := context.Background()
		if _, ok, err := l.Lookup(ctx, "hubspot", "contacts", "r1"); ok || err != nil {
			t.Fatalf("lookup before link = %v, %v", ok, err)
		}
		for range 2 { // idempotent
			if err := l.Link(ctx, "hubspot", "contacts", "r1", "101"); err != nil {
				t.Fatal(err)
			}
		}
		if ext, ok, err := l.Lookup(ctx, "hubspot", "contacts", "r1"); !ok || err != nil || ext != "101" {
			t.Fatalf("lookup = %q %v %v", ext, ok, err)
		}
		if id, ok, err := l.LookupRecord(ctx, "hubspot", "contacts", "101"); !ok || err != nil || id != "r1" {
			t.Fatalf("lookup record = %q %v %v", id, ok, err)
		}
		// One external id belongs to one record.
		if err := l.Link(ctx, "hubspot", "contacts", "r2", "101"); !errors.Is(err, links.ErrConflict) {
			t.Fatalf("second record on one external id: %v, want ErrConflict", err)
		}
		// The same ids in another destination or object type are separate.
		if err := l.Link(ctx, "salesforce", "contacts", "r2", "101"); err != nil {
			t.Fatal(err)
		}
		if err := l.Link(ctx, "hubspot", "companies", "r2", "101"); err != nil {
			t.Fatal(err)
		}
		// Re-link: a record moves to another external id.
		if err := l.Link(ctx, "hubspot", "contacts", "r1", "102"); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := l.LookupRecord(ctx, "hubspot", "contacts", "101"); ok {
			t.Fatal("old external id still linked after re-link")
		}
		if ext, _, _ := l.Lookup(ctx, "hubspot", "contacts", "r1"); ext != "102" {
			t.Fatalf("after re-link = %q", ext)
		}
		// The unique indexes hold even for writers that skip the checks.
		ins := "INSERT INTO hubsync_link (Destination, ObjectType, RecordID, ExternalID, CreatedDate, LastModifiedDate) VALUES (?, ?, ?, ?, ?, ?)"
		if d == store.Postgres {
			ins = "INSERT INTO hubsync_link (Destination, ObjectType, RecordID, ExternalID, CreatedDate, LastModifiedDate) VALUES ($1, $2, $3, $4, $5, $6)"
		}
		var now any = st.Now()
		if d == store.SQLite {
			now = st.Now().UnixMicro()
		}
		if _, err := st.DB().Exec(ins, "hubspot", "contacts", "r3", "102", now, now); err == nil {
			t.Fatal("duplicate (Destination, ObjectType, ExternalID) accepted")
		}
		if _, err := st.DB().Exec(ins, "hubspot", "contacts", "r1", "103", now, now); err == nil {
			t.Fatal("duplicate (Destination, ObjectType, RecordID) accepted")
		}
		if err := l.Unlink(ctx, "hubspot", "contacts", "r1"); err != nil {
			t.Fatal(err)
		}
		if err := l.UnlinkExternal(ctx, "salesforce", "contacts", "101"); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := l.Lookup(ctx, "hubspot", "contacts", "r1"); ok {
			t.Fatal("still linked after Unlink")
		}
		if _, ok, _ := l.Lookup(ctx, "salesforce", "contacts", "r2"); ok {
			t.Fatal("still linked after UnlinkExternal")
		}
		if err := l.Link(ctx, "", "contacts", "r1", "1"); !errors.Is(err, links.ErrInvalid) {
			t.Fatalf("empty destination: %v", err)
		}
	})
}
