package records

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/store"
)

// TestEmailTaken: with a mapping that upserts contacts by email, the
// application cannot give a contact the email another contact holds,
// whatever the case of either: the second contact's upsert would overwrite the
// first one's HubSpot contact. A record keeps, or re-cases, its own email;
// an email freed by a delete or a change is free again; object types
// upserted by another property are not checked.
func TestEmailTaken(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{Mapping: mapping.Default()})
		ctx := context.Background()
		ann, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "ann@example.com", "first_name": "Ann"})
		if err != nil {
			t.Fatal(err)
		}
		for _, email := range []string{"ann@example.com", "Ann@Example.com"} {
			if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": email, "first_name": "Mallory"}); !errors.Is(err, ErrEmailTaken) || !strings.Contains(err.Error(), ann.ID) {
				t.Fatalf("insert of a second contact with %s: %v; want ErrEmailTaken naming %s", email, err, ann.ID)
			}
		}
		cy, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "Cy@Example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "cy@example.com"}); !errors.Is(err, ErrEmailTaken) || !strings.Contains(err.Error(), cy.ID) {
			t.Fatalf("insert of cy@example.com beside Cy@Example.com: %v; want ErrEmailTaken naming %s", err, cy.ID)
		}
		bob, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "bob@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Update(ctx, "contacts", bob.ID, bob.Version, map[string]any{"email": "ann@example.com"}); !errors.Is(err, ErrEmailTaken) {
			t.Fatalf("update to another contact's email: %v; want ErrEmailTaken", err)
		}
		if ann, err = b.svc.Update(ctx, "contacts", ann.ID, ann.Version, map[string]any{"email": "ann@example.com", "first_name": "Anne"}); err != nil {
			t.Fatalf("update keeping its own email: %v", err)
		}
		if ann, err = b.svc.Update(ctx, "contacts", ann.ID, ann.Version, map[string]any{"email": "ANN@example.com"}); err != nil {
			t.Fatalf("update re-casing its own email: %v", err)
		}
		if _, err := b.svc.Insert(ctx, "companies", map[string]any{"email": "ann@example.com"}); err != nil {
			t.Fatalf("a company (upserted by another property) with a contact's email: %v", err)
		}
		if _, err := b.svc.Update(ctx, "contacts", bob.ID, bob.Version, map[string]any{"email": "bob2@example.com"}); err != nil {
			t.Fatal(err)
		}
		if err := b.svc.Delete(ctx, "contacts", ann.ID, ann.Version); err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "ANN@example.com"}); err != nil {
			t.Fatalf("insert of a deleted contact's email: %v", err)
		}
		// The outbound worker upserts by the trimmed address: one with white
		// space around it is refused, naming the fix.
		for _, email := range []string{" bob2@example.com", "bob2@example.com\t"} {
			if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": email}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `write "bob2@example.com"`) {
				t.Fatalf("insert of %q: %v; want ErrInvalid naming the trimmed address", email, err)
			}
		}
		// Capitals beyond ASCII, which SQLite's lower() leaves alone.
		if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "äda@example.com"}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "ÄDA@example.com"}); !errors.Is(err, ErrEmailTaken) {
			t.Fatalf("insert of ÄDA@example.com beside äda@example.com: %v; want ErrEmailTaken", err)
		}
		// And the other way round: the capitals stored first.
		if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "ÖTZI@example.com"}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "ötzi@example.com"}); !errors.Is(err, ErrEmailTaken) {
			t.Fatalf("insert of ötzi@example.com beside ÖTZI@example.com: %v; want ErrEmailTaken", err)
		}
		// The records API answers 409 with the reason.
		srv := httptest.NewServer(b.svc.Handler())
		defer srv.Close()
		resp, err := http.Post(srv.URL+"/api/records/contacts", "application/json", strings.NewReader(`{"fields":{"email":"bob2@example.com"}}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusConflict {
			t.Fatalf("POST of a taken email = %d; want 409", resp.StatusCode)
		}
	})
}

// TestEmailHolderReadsTheIndex: the check that an email is free reads the
// email's index (migration 026), not every contact, before and after the
// table's statistics exist: it runs on every insert of a contact.
func TestEmailHolderReadsTheIndex(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b, mine, q := matchFixture(t, d)
		args := b.svc.emailHolderArgs("contacts", "Mine@example.com", "")
		check := func(when string) {
			t.Helper()
			plan := dbtest.Explain(t, b.st.DB(), d, q.Get("record_find_email_holder"), args...)
			if !strings.Contains(plan, "idx_hubsync_record_email") {
				t.Fatalf("%s, the email check does not read idx_hubsync_record_email:\n%s", when, plan)
			}
			var id string
			if err := b.st.DB().QueryRowContext(context.Background(), q.Get("record_find_email_holder"), args...).Scan(&id); err != nil || id != mine.ID {
				t.Fatalf("%s, the email check found %q, %v; want %s", when, id, err, mine.ID)
			}
		}
		check("without statistics")
		for _, stmt := range map[store.Dialect][]string{
			store.SQLite:   {"ANALYZE"},
			store.Postgres: {"ANALYZE hubsync_record"},
			store.MySQL:    {"ANALYZE TABLE hubsync_record"},
		}[d] {
			if _, err := b.st.DB().Exec(stmt); err != nil {
				t.Fatal(err)
			}
		}
		check("with statistics")
	})
}

// TestMatchByEmailIgnoresCase: HubSpot keeps emails in lower case, so its
// contact "ada@example.com" is the unlinked local contact "Ada@Example.com":
// the creation links that record instead of making a second one.
func TestMatchByEmailIgnoresCase(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		ada, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "Ada@Example.com", "first_name": "Ada"})
		if err != nil {
			t.Fatal(err)
		}
		ch := change(store.EventCreate, "501", b.clock.Now(), map[string]any{"email": "ada@example.com", "first_name": "Ada"})
		ch.MatchField, ch.MatchValue = "email", "ada@example.com"
		res := mustApply(t, b, ch)
		if res.RecordID != ada.ID {
			t.Fatalf("HubSpot's ada@example.com went to record %s (%+v); want the local Ada@Example.com, %s", res.RecordID, res, ada.ID)
		}
		if n := b.count(t, "hubsync_record"); n != 1 {
			t.Fatalf("%d records; want 1", n)
		}
	})
}

// TestEmailOfAContactMergedAway: HubSpot merged Eve's contact into Frank's,
// which has its own local record, so Eve's record was deleted here; HubSpot
// keeps eve@ on Frank's contact. A new local contact with eve@ (whatever its
// case) would be upserted onto Frank's contact: it is refused naming Frank,
// until Frank's record is gone (a privacy deletion forgets the email).
func TestEmailOfAContactMergedAway(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{Mapping: mapping.Default()})
		ctx := context.Background()
		t0 := b.clock.Now().Add(-time.Hour)
		frank := mustApply(t, b, change(store.EventCreate, "1001", t0, map[string]any{"email": "frank@example.com", "first_name": "Frank"}))
		eve := mustApply(t, b, change(store.EventCreate, "1002", t0, map[string]any{"email": "Eve@Example.com", "first_name": "Eve"}))
		mr := change(store.EventMerge, "1001", t0.Add(time.Minute), map[string]any{"first_name": "Frank"})
		mr.MergedIDs = []string{"1002"}
		if res := mustApply(t, b, mr); res.Outcome != apply.Merged {
			t.Fatalf("merge = %+v", res)
		}
		if _, err := b.svc.Get(ctx, "contacts", eve.RecordID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Eve's record after the merge: %v; want it deleted (Frank's record survives)", err)
		}
		for _, email := range []string{"eve@example.com", "EVE@example.com"} {
			if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": email, "first_name": "Eve2"}); !errors.Is(err, ErrEmailTaken) || !strings.Contains(err.Error(), frank.RecordID) {
				t.Fatalf("insert with the merged-away email %s: %v; want ErrEmailTaken naming Frank's record %s", email, err, frank.RecordID)
			}
		}
		other, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "zoe@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Update(ctx, "contacts", other.ID, other.Version, map[string]any{"email": "eve@example.com"}); !errors.Is(err, ErrEmailTaken) {
			t.Fatalf("update to the merged-away email: %v; want ErrEmailTaken", err)
		}
		// Frank's record may write it: the email is its own in HubSpot.
		fr, err := b.svc.Get(ctx, "contacts", frank.RecordID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Update(ctx, "contacts", fr.ID, fr.Version, map[string]any{"email": "eve@example.com"}); err != nil {
			t.Fatalf("Frank's record taking the email merged into it: %v", err)
		}
		fr, _ = b.svc.Get(ctx, "contacts", frank.RecordID)
		if _, err := b.svc.Update(ctx, "contacts", fr.ID, fr.Version, map[string]any{"email": "frank@example.com"}); err != nil {
			t.Fatal(err)
		}
		fr, _ = b.svc.Get(ctx, "contacts", frank.RecordID)
		if err := b.svc.Delete(ctx, "contacts", fr.ID, fr.Version); err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "eve@example.com"}); err != nil {
			t.Fatalf("insert with the email once its holder is gone: %v", err)
		}
	})
}

// TestEmailCheckedByDefault: a Service configured with the zero Config
// sends to HubSpot through the outbound worker's default mapping, so it
// checks emails as that mapping upserts contacts; one with no destination
// has nothing to check against.
func TestEmailCheckedByDefault(t *testing.T) {
	ctx := context.Background()
	b := setup(t, store.SQLite, Config{})
	if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "ann@example.com"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "ANN@example.com"}); !errors.Is(err, ErrEmailTaken) {
		t.Fatalf("the zero Config: a second contact with one email: %v; want ErrEmailTaken", err)
	}
	none := setup(t, store.SQLite, Config{Destinations: []string{}})
	for range 2 {
		if _, err := none.svc.Insert(ctx, "contacts", map[string]any{"email": "ann@example.com"}); err != nil {
			t.Fatalf("no destination: %v", err)
		}
	}
}
