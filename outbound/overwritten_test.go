package outbound_test

import (
	"context"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
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
		rec, aID := syncedContact(t, b, "ada@example.com", "Ada")
		in := b.inboundSide(t)

		b.clock.Advance(time.Second)
		if _, err := b.recs.Update(ctx, "contacts", rec.ID, 1, map[string]any{"first_name": "Local", "last_name": "Lovelace"}); err != nil {
			t.Fatal(err)
		}
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

		o, _ := b.sim.Object("contacts", aID)
		got, err := b.recs.Get(ctx, "contacts", rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if o.Properties["firstname"] != "HubSpot" || got.Fields["first_name"] != "HubSpot" {
			t.Errorf("HubSpot firstname %q, local first_name %v; want both the newer HubSpot", o.Properties["firstname"], got.Fields["first_name"])
		}
		if o.Properties["lastname"] != "Lovelace" {
			t.Errorf("HubSpot lastname %q; want the local edit's Lovelace", o.Properties["lastname"])
		}
		if n := b.counts(t)[store.StatusFailed]; n != 0 {
			t.Errorf("%d dead letters", n)
		}
	})
}
