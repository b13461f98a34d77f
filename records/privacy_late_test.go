package records

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/store"
)

// TestPrivacyDeleteAfterDeleteForgets: HubSpot deletes a contact, then
// sends its privacy deletion. The record is gone by then, but the state
// pushed to HubSpot (its values) and the merged-away emails it held must go
// too, as they do when the privacy deletion finds the record live.
func TestPrivacyDeleteAfterDeleteForgets(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		t0 := b.clock.Now().Add(time.Hour)
		p := mustApply(t, b, change(store.EventCreate, "9", t0, map[string]any{"email": "secret@example.com"}))
		if err := b.links.PushedMany(ctx, "hubspot", "contacts", []links.Pushed{{RecordID: p.RecordID, ExternalID: "9", Version: 1, Seq: 1,
			Fields: map[string]any{"email": "secret@example.com"}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.st.DB().Exec(dialectsql.Rebind(d, "INSERT INTO hubsync_email_alias (ObjectType, Email, RecordID) VALUES (?, ?, ?)"), "contacts", "old-secret@example.com", p.RecordID); err != nil {
			t.Fatal(err)
		}
		if res := mustApply(t, b, change(store.EventDelete, "9", t0.Add(time.Minute), nil)); res.Outcome != apply.Deleted {
			t.Fatalf("delete = %+v", res)
		}
		if pushed, err := b.links.LookupPushedMany(ctx, "hubspot", "contacts", []string{p.RecordID}); err != nil || len(pushed) != 1 {
			t.Fatalf("pushed states after a plain deletion: %+v, %v; want kept (test setup)", pushed, err)
		}
		mustApply(t, b, change(store.EventPrivacyDelete, "9", t0.Add(2*time.Minute), nil))
		if pushed, err := b.links.LookupPushedMany(ctx, "hubspot", "contacts", []string{p.RecordID}); err != nil || len(pushed) != 0 {
			t.Fatalf("pushed states after deletion then privacy deletion: %+v, %v; want none (they hold the record's values)", pushed, err)
		}
		if n := b.count(t, "hubsync_email_alias"); n != 0 {
			t.Fatalf("%d merged-away emails kept after the privacy deletion", n)
		}
	})
}

// TestDeleteForgetsHeldEmails: a record deleted here (then unlinked by its
// archive) holds no merged-away emails any more: a new record may take them,
// and a privacy deletion that comes after, which finds no link, has none to
// forget.
func TestDeleteForgetsHeldEmails(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		rec, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "frank@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.HoldEmails(ctx, "contacts", rec.ID, []string{"old-secret@example.com"}, false); err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "old-secret@example.com"}); !errors.Is(err, ErrEmailTaken) {
			t.Fatalf("a held email: %v; want ErrEmailTaken (test setup)", err)
		}
		if err := b.svc.Delete(ctx, "contacts", rec.ID, rec.Version); err != nil {
			t.Fatal(err)
		}
		if n := b.count(t, "hubsync_email_alias"); n != 0 {
			t.Fatalf("%d merged-away emails kept after the record's deletion", n)
		}
	})
}
