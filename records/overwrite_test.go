package records

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

// TestResendAfterAnOverwritingWrite: a HubSpot change applied here is sent
// back to HubSpot when a write of the record's may have overwritten it
// there (its last write was stored after the change's time with another
// value, or a write is queued or in flight), and only then: a HubSpot change
// after the record's last write costs no call.
func TestResendAfterAnOverwritingWrite(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		rec := linkedContact(t, b)
		// The outbound worker wrote the record and stored what HubSpot accepted.
		written := func() {
			t.Helper()
			b.processOutbound(t, rec.ID)
			cur, err := b.svc.Get(ctx, "contacts", rec.ID)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.links.PushedMany(ctx, "hubspot", "contacts", []links.Pushed{{RecordID: rec.ID, ExternalID: "777", Version: cur.Version, Fields: cur.Fields}}); err != nil {
				t.Fatal(err)
			}
		}
		resent := func() []*outbox.Snapshot { return b.resent(t, rec.ID) }
		change := func(at time.Time, fields map[string]any) {
			t.Helper()
			res, err := b.svc.Apply(ctx, apply.Change{Source: "hubspot", ObjectType: "contacts", ExternalID: "777", Kind: store.EventUpdate, Fields: fields, OccurredAt: at})
			if err != nil || res.Outcome != apply.Updated {
				t.Fatalf("apply %v at %s = %+v, %v; want updated", fields, at, res, err)
			}
		}

		written()
		b.clock.Advance(time.Second)
		change(b.clock.Now(), map[string]any{"first_name": "After"})
		if got := resent(); len(got) != 0 {
			t.Fatalf("a HubSpot change after the record's last write was resent: %+v", got)
		}

		b.clock.Advance(2 * time.Second)
		written()
		change(b.clock.Now().Add(-500*time.Millisecond), map[string]any{"first_name": "Before"})
		got := resent()
		if len(got) != 1 || got[0].Fields["first_name"] != "Before" {
			t.Fatalf("resent %+v; want one write of first_name Before (the last write reached HubSpot after it)", got)
		}

		written()
		b.clock.Advance(time.Second)
		cur, err := b.svc.Get(ctx, "contacts", rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Update(ctx, "contacts", rec.ID, cur.Version, map[string]any{"last_name": "Lovelace"}); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(time.Second)
		change(b.clock.Now(), map[string]any{"first_name": "Queued"})
		if got := resent(); len(got) != 2 || got[1].Fields["first_name"] != "Queued" {
			t.Fatalf("resent %+v; want a second write, of first_name Queued (a write of the record is queued)", got)
		}
	})
}

// TestResendSeesAWriteQueuedDuringTheApply: a write of the record queued by
// another transaction after the apply's transaction began, and committed
// before the apply locked the record (here drift's Service.Resend, which
// moves no clock), is a write in flight that the applied change may lose
// to. Under MySQL's REPEATABLE READ a plain read of the queue answered from
// the transaction's first snapshot and missed it, so nothing was resent.
func TestResendSeesAWriteQueuedDuringTheApply(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		if d == store.SQLite {
			t.Skip("SQLite's transactions are serial: no write commits inside one")
		}
		b := setup(t, d, Config{})
		ctx := context.Background()
		rec := linkedContact(t, b)
		b.processOutbound(t, rec.ID)
		fired := false
		b.svc.testAttempt = func(tx *sql.Tx) {
			if fired {
				return
			}
			fired = true
			var n int
			// The apply's first read, which takes MySQL's snapshot.
			if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM hubsync_record").Scan(&n); err != nil {
				t.Error(err)
			}
			if _, err := b.svc.Resend(ctx, "contacts", rec.ID, nil); err != nil {
				t.Error(err)
			}
		}
		b.clock.Advance(time.Second)
		res, err := b.svc.Apply(ctx, apply.Change{Source: "hubspot", ObjectType: "contacts", ExternalID: "777", Kind: store.EventUpdate, Fields: map[string]any{"first_name": "Grace"}, OccurredAt: b.clock.Now()})
		if err != nil || res.Outcome != apply.Updated {
			t.Fatalf("apply = %+v, %v; want updated", res, err)
		}
		if resent := b.resent(t, rec.ID); !fired || len(resent) != 1 {
			t.Fatalf("hook fired %v, resent %+v; want the applied change sent back after the write queued during the apply", fired, resent)
		}
	})
}

// linkedContact inserts a contact and links it to HubSpot object 777.
func linkedContact(t *testing.T, b *bundle) Record {
	t.Helper()
	ctx := context.Background()
	rec, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "ada@example.com", "first_name": "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.links.Link(ctx, "hubspot", "contacts", rec.ID, "777"); err != nil {
		t.Fatal(err)
	}
	return rec
}

// processOutbound marks the record's outbound events processed, as the
// outbound worker would after writing them.
func (b *bundle) processOutbound(t *testing.T, recordID string) {
	t.Helper()
	q := dialectsql.Rebind(b.d, "UPDATE _System_IntegrationOutbound SET Status = 'processed' WHERE RecordID = ?")
	if _, err := b.st.DB().ExecContext(context.Background(), q, recordID); err != nil {
		t.Fatal(err)
	}
}

// resent returns the record's outbound events that send a HubSpot change back
// to HubSpot (outbox.MetadataResent).
func (b *bundle) resent(t *testing.T, recordID string) []*outbox.Snapshot {
	var out []*outbox.Snapshot
	for _, o := range b.outbound(t, recordID) {
		if o.Payload != nil && o.Payload.Metadata[outbox.MetadataResent] == "hubspot" {
			out = append(out, o.Payload)
		}
	}
	return out
}
