package drift_test

import (
	"strings"
	"testing"

	"github.com/hubsync/hubsync/drift"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// TestRepairThatRanIsNotRepairedAgain: a scan's repair is an inbound event
// whose idempotency key is the same on every scan. Once it ran without fixing the drift (here a dead letter), the next scan's enqueue is
// a duplicate that queues nothing, so the difference is remaining, and its
// reason names the event, instead of a "repaired" that makes `hubsync drift`
// exit 0 with the drift still there.
func TestRepairThatRanIsNotRepairedAgain(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, drift.Config{SkipOrphans: true})
		rec, hid := b.contact(t, "ada@example.com", "Ada")
		if err := b.sim.UserUpdate("contacts", hid, map[string]string{"firstname": "Grace"}); err != nil {
			t.Fatal(err)
		}
		if df := only(t, b.run(t, drift.Options{})); !df.Repaired || df.Repair != drift.ToLocal {
			t.Fatalf("first scan: %+v; want repaired to_local", df)
		}
		// The SyncWorker gives up on the repair: a dead letter, the record
		// keeps its old value.
		b.exec(t, "UPDATE _System_IntegrationInbound SET Status = 'failed' WHERE ExternalID = ? AND Status = 'pending'", hid)
		b.drain(t)
		if got := b.field(t, rec.ID, "first_name"); got != "Ada" {
			t.Fatalf("first_name = %v; the dead-lettered repair was applied", got)
		}
		rep := b.run(t, drift.Options{})
		df := only(t, rep)
		if df.Repaired || rep.Remaining != 1 || !strings.Contains(df.Reason, "failed") {
			t.Fatalf("scan after the repair was dead-lettered: %+v, remaining %d; want it remaining, its reason naming the failed repair", df, rep.Remaining)
		}
	})
}
