package records

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/store"
)

// TestHoldEmails: the emails HubSpot keeps on a contact besides its own
// become held by its record, so that a new contact with one of them, or
// another contact's change to one, gets ErrEmailTaken naming the holder. A
// dry run writes nothing; the record's own email, blanks and repeats are
// skipped; an email another live record has is reported, not held; an email
// held by another record moves (HubSpot says where it is now); holding them
// again finds nothing new.
func TestHoldEmails(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{Mapping: mapping.Default()})
		ctx := context.Background()
		frank, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "frank@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		gus, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "gus@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		emails := []string{" Eve@Example.com", "frank@example.com", "", "eve@example.com", "gus@example.com", "old@example.com"}

		res, err := b.svc.HoldEmails(ctx, "contacts", frank.ID, emails, true)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"eve@example.com", "old@example.com"}; !slices.Equal(res.Held, want) || res.Taken["gus@example.com"] != gus.ID || len(res.Taken) != 1 {
			t.Fatalf("dry run = %+v; want held %v and gus@example.com taken by %s", res, want, gus.ID)
		}
		if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "eve@example.com"}); err != nil {
			t.Fatalf("after a dry run, a new contact with eve@example.com: %v; want it created (nothing held)", err)
		}
		if err := b.svc.Delete(ctx, "contacts", mustFind(t, b, "eve@example.com"), 1); err != nil {
			t.Fatal(err)
		}

		res, err = b.svc.HoldEmails(ctx, "contacts", frank.ID, emails, false)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"eve@example.com", "old@example.com"}; !slices.Equal(res.Held, want) {
			t.Fatalf("held = %v; want %v", res.Held, want)
		}
		for _, e := range []string{"EVE@example.com", "old@example.com"} {
			if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": e}); !errors.Is(err, ErrEmailTaken) || !strings.Contains(err.Error(), frank.ID) {
				t.Fatalf("a new contact with %s: %v; want ErrEmailTaken naming %s", e, err, frank.ID)
			}
		}
		if _, err := b.svc.Update(ctx, "contacts", gus.ID, gus.Version, map[string]any{"email": "old@example.com"}); !errors.Is(err, ErrEmailTaken) {
			t.Fatalf("another contact changed to a held email: %v; want ErrEmailTaken", err)
		}
		if _, err := b.svc.Update(ctx, "contacts", gus.ID, gus.Version, map[string]any{"first_name": "Gus"}); err != nil {
			t.Fatalf("the contact that has a reported email, written: %v (it must not be held by another)", err)
		}
		res, err = b.svc.HoldEmails(ctx, "contacts", frank.ID, emails, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Held) != 0 {
			t.Fatalf("held again = %v; want nothing new", res.Held)
		}

		// HubSpot says old@example.com is on another contact now.
		hal, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "hal@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if res, err = b.svc.HoldEmails(ctx, "contacts", hal.ID, []string{"old@example.com"}, false); err != nil || !slices.Equal(res.Held, []string{"old@example.com"}) {
			t.Fatalf("moving old@example.com to hal: %+v, %v", res, err)
		}
		if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "old@example.com"}); !errors.Is(err, ErrEmailTaken) || !strings.Contains(err.Error(), hal.ID) {
			t.Fatalf("a new contact with a moved email: %v; want ErrEmailTaken naming %s", err, hal.ID)
		}

		// Types not upserted by email, and missing records.
		co, err := b.svc.Insert(ctx, "companies", map[string]any{"name": "Acme"})
		if err != nil {
			t.Fatal(err)
		}
		if res, err = b.svc.HoldEmails(ctx, "companies", co.ID, []string{"x@example.com"}, false); err != nil || len(res.Held) != 0 {
			t.Fatalf("a company: %+v, %v; want nothing held", res, err)
		}
		if _, err = b.svc.HoldEmails(ctx, "contacts", "missing", []string{"x@example.com"}, false); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a missing record: %v; want ErrNotFound", err)
		}
	})
}

func mustFind(t *testing.T, b *bundle, email string) string {
	t.Helper()
	page, err := b.svc.List(context.Background(), "contacts", ListOptions{Limit: ListLimitMax})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range page {
		if r.Fields["email"] == email {
			return r.ID
		}
	}
	t.Fatalf("no contact with %s", email)
	return ""
}

// TestAliasForgetReadsTheIndex: forgetting (on every deletion) and moving
// (on merges) a record's held emails read them by record (migration 032),
// not every alias of the type: on MySQL/MariaDB such a statement locks what
// it reads, so concurrent deletions would wait for each other.
func TestAliasForgetReadsTheIndex(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		db := b.st.DB()
		for i := range 300 {
			if _, err := db.Exec(dialectsql.Rebind(d, "INSERT INTO hubsync_email_alias (ObjectType, Email, RecordID) VALUES (?, ?, ?)"),
				"contacts", fmt.Sprintf("e%d@example.com", i), fmt.Sprintf("r%d", i%100)); err != nil {
				t.Fatal(err)
			}
		}
		for _, stmt := range map[store.Dialect][]string{
			store.SQLite:   {"ANALYZE"},
			store.Postgres: {"ANALYZE hubsync_email_alias"},
			store.MySQL:    {"ANALYZE TABLE hubsync_email_alias"},
		}[d] {
			if _, err := db.Exec(stmt); err != nil {
				t.Fatal(err)
			}
		}
		for name, args := range map[string][]any{
			"email_alias_forget": {"contacts", "r7"},
			"email_alias_move":   {"r8", "contacts", "r7"},
		} {
			if plan := dbtest.Explain(t, db, d, b.svc.q.Get(name), args...); !strings.Contains(plan, "idx_hubsync_email_alias_record") {
				t.Errorf("%s does not read idx_hubsync_email_alias_record:\n%s", name, plan)
			}
		}
	})
}
