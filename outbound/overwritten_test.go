package outbound_test

import (
	"context"
	"testing"
	"time"

	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// TestNewerHubSpotValueNotOverwritten: a record's local edit waits to go out
// (a replica holding it crashed, say) while a HubSpot user changes the same
// field later, and the SyncWorker applies that change here. The waiting
// update must not then write its older value over HubSpot's newer one: both
// sides keep the HubSpot user's value, and the edit's other field still goes
// out. Before, HubSpot got the older value while the record kept the newer.
func TestNewerHubSpotValueNotOverwritten(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		b := setup(t, options{dialect: d})
		rec, aID, in := editedContact(t, b)
		b.clock.Advance(time.Second)
		if err := b.sim.UserUpdate("contacts", aID, map[string]string{"firstname": "HubSpot"}); err != nil {
			t.Fatal(err)
		}
		if !deliverInbound(ctx, t, b, in) {
			t.FailNow()
		}
		if got, _ := b.recs.Get(ctx, "contacts", rec.ID); got.Fields["first_name"] != "HubSpot" {
			t.Fatalf("the HubSpot change was not applied locally (test setup): %v", got.Fields)
		}
		b.drain(t, b.worker(t, nil))
		drainInbound(t, b, in)

		bothKeepTheNewer(t, b, aID, rec.ID)
		if n := b.counts(t)[store.StatusFailed]; n != 0 {
			t.Errorf("%d dead letters", n)
		}
	})
}

// TestHubSpotEditDuringUpdate: a HubSpot user changes a field while the
// outbound worker's update of the same field is on its way (the worker read
// the record before the change was applied here), so HubSpot applies the
// older local value last. The SyncWorker applies the user's change here
// during the call (webhookDuring) or after the cycle (its delivery was
// late). Both sides must end with the user's newer value: the records
// service sends it back after the write that overwrote it. Before, HubSpot
// kept the older local value and the record the newer one until drift.
func TestHubSpotEditDuringUpdate(t *testing.T) {
	for _, webhookDuring := range []bool{true, false} {
		name := map[bool]string{true: "webhook_during_the_call", false: "webhook_after_the_cycle"}[webhookDuring]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dbtest.Each(t, func(t *testing.T, d store.Dialect) {
				ctx := context.Background()
				b := setup(t, options{dialect: d})
				rec, aID, in := editedContact(t, b)
				h := &hookedHubSpot{HubSpot: b.client}
				h.before = func() {
					b.clock.Advance(time.Second)
					if err := b.sim.UserUpdate("contacts", aID, map[string]string{"firstname": "HubSpot"}); err != nil {
						t.Error(err)
						return
					}
					if webhookDuring && !deliverInbound(ctx, t, b, in) {
						return
					}
					b.clock.Advance(time.Second) // the call takes its time
				}
				var afterCall string
				h.after = func() {
					o, _ := b.sim.Object("contacts", aID)
					afterCall = o.Properties["firstname"]
				}
				w := b.worker(t, func(c *outbound.Config) { c.HubSpot = h })
				b.drain(t, w)
				if afterCall != "Local" {
					t.Fatalf("HubSpot firstname %q after the update; want the overwriting Local (test setup)", afterCall)
				}
				if !webhookDuring && !deliverInbound(ctx, t, b, in) {
					t.FailNow()
				}
				b.drain(t, w)
				drainInbound(t, b, in)

				bothKeepTheNewer(t, b, aID, rec.ID)
				if n := b.counts(t)[store.StatusFailed]; n != 0 {
					t.Errorf("%d dead letters", n)
				}
			})
		})
	}
}

// editedContact syncs a contact (ada@example.com, Ada) to HubSpot object aID,
// points HubSpot's webhooks at a SyncWorker (in), and edits the contact
// locally (first_name Local, last_name Lovelace) a second later, leaving
// the edit queued.
func editedContact(t *testing.T, b *bundle) (rec records.Record, aID string, in *inbound.Worker) {
	t.Helper()
	rec, aID = syncedContact(t, b, "ada@example.com", "Ada")
	in = b.inboundSide(t)
	b.clock.Advance(time.Second)
	if _, err := b.recs.Update(context.Background(), "contacts", rec.ID, 1, map[string]any{"first_name": "Local", "last_name": "Lovelace"}); err != nil {
		t.Fatal(err)
	}
	return rec, aID, in
}

// bothKeepTheNewer checks that HubSpot's aID and record recordID (see
// editedContact) both hold the HubSpot user's first name, HubSpot, and the
// local edit's last name, Lovelace.
func bothKeepTheNewer(t *testing.T, b *bundle, aID, recordID string) {
	t.Helper()
	o, _ := b.sim.Object("contacts", aID)
	got, err := b.recs.Get(context.Background(), "contacts", recordID)
	if err != nil {
		t.Fatal(err)
	}
	if o.Properties["firstname"] != "HubSpot" || got.Fields["first_name"] != "HubSpot" {
		t.Errorf("HubSpot firstname %q, local first_name %v; want both the newer HubSpot", o.Properties["firstname"], got.Fields["first_name"])
	}
	if o.Properties["lastname"] != "Lovelace" || got.Fields["last_name"] != "Lovelace" {
		t.Errorf("HubSpot lastname %q, local %v; want both the local edit's Lovelace", o.Properties["lastname"], got.Fields["last_name"])
	}
}

// hookedLocal runs before once, in the first CurrentFields call: a change
// that lands while an outbound cycle plans its updates.
type hookedLocal struct {
	outbound.LocalRecords
	before func()
}

func (h *hookedLocal) CurrentFields(ctx context.Context, objectType string, ids []string) (map[string]map[string]any, error) {
	if f := h.before; f != nil {
		h.before = nil
		f()
	}
	return h.LocalRecords.CurrentFields(ctx, objectType, ids)
}

// TestLaterWriteBackToTheDroppedValue: an update's field is dropped because a
// later local write changed it while the cycle planned (its own event
// follows), and a write after that sets it back to the dropped value. The
// later events then changed nothing against the value before them, so
// nothing sent the field, and HubSpot kept the value from before the first
// update while the record held the last (a chaos run's lifecycle stage
// cycling through its values). A dropped field is owed now: the record's
// next write carries it.
func TestLaterWriteBackToTheDroppedValue(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		b := setup(t, options{dialect: d})
		rec, aID := syncedContact(t, b, "ada@example.com", "Ada")
		update := func(version int64, name string) {
			t.Helper()
			if _, err := b.recs.Update(ctx, "contacts", rec.ID, version, map[string]any{"first_name": name}); err != nil {
				t.Fatal(err)
			}
		}
		update(1, "Ada2")
		hl := &hookedLocal{LocalRecords: b.recs, before: func() { update(2, "Ada3") }}
		w := b.worker(t, func(c *outbound.Config) { c.LocalRecords = hl })
		if _, err := w.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if hl.before != nil {
			t.Fatal("the cycle read no current fields (test setup)")
		}
		update(3, "Ada2")
		b.drain(t, w)

		o, _ := b.sim.Object("contacts", aID)
		got, err := b.recs.Get(ctx, "contacts", rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if o.Properties["firstname"] != "Ada2" || got.Fields["first_name"] != "Ada2" {
			t.Errorf("HubSpot firstname %q, local first_name %v; want both the last write's Ada2", o.Properties["firstname"], got.Fields["first_name"])
		}
	})
}
