package drift_test

import (
	"testing"

	"github.com/hubsync/hubsync/drift"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// A contact created here as "Ada@Example.com" whose upsert reached HubSpot
// (HubSpot keeps emails in lower case) but whose answer was lost: its
// outbound event waits for its retry, so the record has no link yet. The
// orphan walk must find the local record whatever the case of its email,
// and not enqueue the HubSpot contact's creation, which would make a second
// local contact.
func TestOrphanWalkFindsMixedCaseLocalEmail(t *testing.T) {
	dbtest.Each(t, testOrphanMixedCase)
}

func testOrphanMixedCase(t *testing.T, d store.Dialect) {
	b := setup(t, d, drift.Config{})
	ctx := t.Context()
	rec, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "Ada@Example.com", "first_name": "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	// What the lost upsert left in HubSpot.
	hid, err := b.sim.UserCreate("contacts", map[string]string{"email": "ada@example.com", "firstname": "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	rep := b.run(t, drift.Options{})
	for _, df := range rep.Differences {
		if df.Kind == drift.KindOrphan {
			t.Errorf("the HubSpot contact of the local Ada@Example.com is reported an orphan: %s", df)
		}
	}
	// The SyncWorker takes the repair before the outbound retry links the record.
	if _, err := b.in.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	b.drain(t)
	n := b.count(t, "SELECT COUNT(*) FROM hubsync_record WHERE ObjectType = 'contacts'")
	dead := b.count(t, "SELECT COUNT(*) FROM _System_IntegrationOutbound WHERE Status = 'failed'")
	t.Logf("local contacts: %d; outbound dead letters: %d; record %s, HubSpot %s", n, dead, rec.ID, hid)
	if n != 1 {
		t.Fatalf("the drift repair created a duplicate local contact: %d contacts for one email", n)
	}
}
