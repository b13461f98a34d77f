package records

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/store"
)

// waitingIn reports whether a session of this database runs a statement
// whose text holds fragment and, on PostgreSQL, waits for a lock (MariaDB's
// lock views do not show every wait; a statement of the test's own that
// still runs after the condition's first polls is waiting).
func waitingIn(t *testing.T, b *bundle, fragment string) bool {
	t.Helper()
	q := map[store.Dialect]string{
		store.Postgres: `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND position($1 in query) > 0`,
		store.MySQL:    `SELECT count(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND INSTR(INFO, ?) > 0`,
	}[b.d]
	var n int
	if err := b.st.DB().QueryRowContext(context.Background(), q, fragment).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// TestTombstoneDeletedSeesTheDeletionItWaitedFor: the outbound worker links
// two records of one create call, both deleted while it was in flight; the
// second's deletion (which looked for links before the link was stored) is
// still running when the check comes to it, so the check waits for its row
// lock. Once the deletion commits, the check must see it and tombstone the
// object. On MariaDB the check read the deletion's version from the snapshot
// its first read had taken, before the deletion committed, and wrote no
// tombstone.
func TestTombstoneDeletedSeesTheDeletionItWaitedFor(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		if d == store.SQLite {
			t.Skip("SQLite admits one writer: the check cannot start while a deletion runs")
		}
		b := setup(t, d, Config{})
		ctx := context.Background()
		first := deletedHere(t, b, map[string]any{"email": "first@example.com"})
		rec, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "del@example.com"})
		if err != nil || first.ID >= rec.ID {
			t.Fatal(err, first.ID, rec.ID)
		}
		// Hold rec's deletion after it looked for links: its field clock
		// write waits for this transaction's row.
		hold, err := b.st.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer hold.Rollback()
		if _, err := hold.ExecContext(ctx, dialectsql.Rebind(d, "INSERT INTO hubsync_field_clock (ObjectType, RecordID, Field, OccurredAt) VALUES (?, ?, ?, ?)"),
			"contacts", rec.ID, apply.DeletedClock, dialectsql.Time(d, time.Now())); err != nil {
			t.Fatal(err)
		}
		deleted := make(chan error, 1)
		go func() { deleted <- b.svc.Delete(ctx, "contacts", rec.ID, rec.Version) }()
		testwait.For(t, "the deletion waits at its field clock", func() bool { return waitingIn(t, b, "INSERT INTO hubsync_field_clock") })
		if err := b.links.Link(ctx, "hubspot", "contacts", rec.ID, "222"); err != nil { // the worker's link
			t.Fatal(err)
		}
		type result struct {
			gone []string
			err  error
		}
		checked := make(chan result, 1)
		go func() {
			g, err := b.svc.TombstoneDeleted(ctx, "hubspot", "contacts", map[string]string{first.ID: "111", rec.ID: "222"})
			checked <- result{g, err}
		}()
		testwait.For(t, "the check waits for the deletion's row", func() bool { return waitingIn(t, b, "SELECT 1 FROM hubsync_record") })
		if err := hold.Rollback(); err != nil {
			t.Fatal(err)
		}
		if err := <-deleted; err != nil {
			t.Fatal(err)
		}
		r := <-checked
		if r.err != nil || len(r.gone) != 2 {
			t.Fatalf("TombstoneDeleted = %v, %v; want both records gone", r.gone, r.err)
		}
		for _, ext := range []string{"111", "222"} {
			if ts, ok, err := b.links.Tombstone(ctx, "hubspot", "contacts", ext); err != nil || !ok || ts.Kind != apply.TombstoneLocalDeleted {
				t.Errorf("object %s: tombstone %+v, %v, %v; want a local deletion's", ext, ts, ok, err)
			}
		}
	})
}

// TestChangeAfterTheLinkOfADeletedRecord: a record deleted while its create
// was in flight is linked after its deletion looked for links. A HubSpot
// change of the object applied before the outbound worker's check
// (TombstoneDeleted) must not bring the record back: it is stale, and the
// object gets the local deletion's tombstone.
func TestChangeAfterTheLinkOfADeletedRecord(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		rec := deletedBeforeItsLink(t, b, "333")
		res, err := b.svc.Apply(ctx, apply.Change{
			Source: "hubspot", ObjectType: "contacts", ExternalID: "333", Kind: store.EventUpdate,
			Fields:     map[string]any{"email": "gone@example.com", "first_name": "Edited"},
			OccurredAt: b.clock.Now().Add(time.Minute),
		})
		if err != nil || res.Outcome != apply.Stale {
			t.Fatalf("HubSpot change after the link = %+v, %v; want stale", res, err)
		}
		if got, err := b.svc.Get(ctx, "contacts", rec.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("record = %+v, %v; want it deleted", got, err)
		}
		if ts, ok, err := b.links.Tombstone(ctx, "hubspot", "contacts", "333"); err != nil || !ok || ts.Kind != apply.TombstoneLocalDeleted {
			t.Fatalf("tombstone %+v, %v, %v; want a local deletion's", ts, ok, err)
		}
	})
}

// TestMergeAfterTheLinkOfADeletedRecord: as TestChangeAfterTheLinkOfADeletedRecord,
// but the HubSpot change is a merge of another synced contact into the new
// object. The merged record is deleted (the survivor's archive removes both
// objects) rather than re-pointed to the object the deletion archives.
func TestMergeAfterTheLinkOfADeletedRecord(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		at := b.clock.Now().Add(time.Minute)
		other := mustApply(t, b, change(store.EventCreate, "444", at, map[string]any{"email": "other@example.com"})).RecordID
		rec := deletedBeforeItsLink(t, b, "333")
		mr := change(store.EventMerge, "333", at.Add(time.Second), map[string]any{"email": "gone@example.com", "first_name": "Merged"})
		mr.MergedIDs = []string{"444"}
		res := mustApply(t, b, mr)
		if got, err := b.svc.Get(ctx, "contacts", other); !errors.Is(err, ErrNotFound) {
			t.Fatalf("merge = %+v; merged record = %+v, %v; want it deleted with the survivor", res, got, err)
		}
		if got, err := b.svc.Get(ctx, "contacts", rec.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("merge = %+v; survivor's record = %+v, %v; want it still deleted", res, got, err)
		}
		if id, ok, err := b.links.LookupRecord(ctx, "hubspot", "contacts", "333"); err != nil || !ok || id != rec.ID {
			t.Fatalf("survivor linked to %q, %v, %v; want the deleted record %s, whose deletion archives it", id, ok, err, rec.ID)
		}
		if ts, ok, err := b.links.Tombstone(ctx, "hubspot", "contacts", "333"); err != nil || !ok || ts.Kind != apply.TombstoneLocalDeleted {
			t.Fatalf("survivor's tombstone %+v, %v, %v; want a local deletion's", ts, ok, err)
		}
	})
}

// deletedBeforeItsLink makes a contact here and deletes it, then links it to
// HubSpot object ext, as the outbound worker does when the deletion came
// while the record's create was in flight.
func deletedBeforeItsLink(t *testing.T, b *bundle, ext string) Record {
	t.Helper()
	rec := deletedHere(t, b, map[string]any{"email": "gone@example.com", "first_name": "Gone"})
	if err := b.links.Link(context.Background(), "hubspot", "contacts", rec.ID, ext); err != nil { // the worker's link
		t.Fatal(err)
	}
	return rec
}

// deletedHere makes a contact of fields through the records service and
// deletes it there, as the application would.
func deletedHere(t *testing.T, b *bundle, fields map[string]any) Record {
	t.Helper()
	ctx := context.Background()
	rec, err := b.svc.Insert(ctx, "contacts", fields)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.svc.Delete(ctx, "contacts", rec.ID, rec.Version); err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestDeletedAtSource: the outbound worker asks which records without a link
// the destination's own change deleted (outbound.SourceDeletedRecords), so
// that their queued changes are not written afresh. A record HubSpot deleted
// (its deletion or privacy deletion applied here) is one, for HubSpot only:
// the deletion was queued for the other destination. A record the
// application deleted is none (its deletion was queued for every
// destination), nor is a live one.
func TestDeletedAtSource(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		b := setup(t, d, Config{Destinations: []string{"hubspot", "salesforce"}})
		at := b.clock.Now().Add(time.Hour)
		byHubSpot := mustApply(t, b, change(store.EventCreate, "101", at, map[string]any{"email": "a@example.com"})).RecordID
		mustApply(t, b, change(store.EventDelete, "101", at.Add(time.Second), nil))
		// A privacy deletion forgets the record's pushed state, so only the
		// records service can tell.
		private := mustApply(t, b, change(store.EventCreate, "102", at, map[string]any{"email": "p@example.com"})).RecordID
		mustApply(t, b, change(store.EventPrivacyDelete, "102", at.Add(time.Second), nil))
		local := deletedHere(t, b, map[string]any{"email": "b@example.com"})
		live, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "c@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		ids := []string{byHubSpot, private, local.ID, live.ID, "never-was"}
		for dest, want := range map[string][]string{"hubspot": {byHubSpot, private}, "salesforce": nil} {
			got, err := b.svc.DeletedAtSource(ctx, dest, "contacts", ids)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("DeletedAtSource(%s) = %v; want %v (HubSpot's deletion %s, the application's %s, live %s)", dest, got, want, byHubSpot, local.ID, live.ID)
			}
		}
	})
}

// TestDeleteForgetsFieldClocks: a deleted record keeps only its $-clocks
// (read while it is deleted), not one row per field it ever had, whether
// the application or HubSpot deleted it.
func TestDeleteForgetsFieldClocks(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		b := setup(t, d, Config{})
		fieldClocks := func(id string) (values, dollar int) {
			t.Helper()
			rows, err := b.st.DB().QueryContext(ctx, dialectsql.Rebind(d, "SELECT Field FROM hubsync_field_clock WHERE ObjectType = 'contacts' AND RecordID = ?"), id)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var f string
				if err := rows.Scan(&f); err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(f, "$") {
					dollar++
				} else {
					values++
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			return values, dollar
		}
		rec, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "clocks@example.com", "first_name": "Ann", "phone": "1"})
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := fieldClocks(rec.ID); v == 0 {
			t.Fatal("no field clocks for a live record; the test reads the wrong rows")
		}
		if err := b.svc.Delete(ctx, "contacts", rec.ID, rec.Version); err != nil {
			t.Fatal(err)
		}
		if v, _ := fieldClocks(rec.ID); v != 0 {
			t.Fatalf("%d field clocks kept for a deleted record; want only its $-clocks", v)
		}

		// Made by HubSpot, then deleted there.
		t0 := b.clock.Now().Add(-time.Hour)
		made := mustApply(t, b, change(store.EventCreate, "77", t0, map[string]any{"email": "hs@example.com", "first_name": "Bo"}))
		if v, _ := fieldClocks(made.RecordID); v == 0 {
			t.Fatal("no field clocks for the record HubSpot made")
		}
		if res := mustApply(t, b, change(store.EventDelete, "77", t0.Add(time.Minute), nil)); res.Outcome != apply.Deleted {
			t.Fatalf("HubSpot's deletion = %+v; want the record deleted", res)
		}
		v, dollar := fieldClocks(made.RecordID)
		if v != 0 || dollar == 0 {
			t.Fatalf("after HubSpot's deletion: %d field clocks, %d $-clocks; want none and the deletion's", v, dollar)
		}
	})
}
