package outbound_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// hookedHubSpot runs after once, after HubSpot answered the first BatchUpdate
// and before the worker sees the answer.
type hookedHubSpot struct {
	outbound.HubSpot
	once, onceBefore sync.Once
	// before runs once before the first BatchUpdate reaches HubSpot, after
	// once after it has (either may be nil).
	before, after func()
}

func (h *hookedHubSpot) BatchUpdate(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpdateInput) (*hubspot.BatchResult, error) {
	if h.before != nil {
		h.onceBefore.Do(h.before)
	}
	res, err := h.HubSpot.BatchUpdate(ctx, t, in)
	if h.after != nil {
		h.once.Do(h.after)
	}
	return res, err
}

// TestMergeDuringUpdate: local record R is linked to HubSpot contact A.
// R is edited locally; the outbound worker updates A by id. While the call is
// in flight (HubSpot has applied it), a HubSpot user merges A into B (which has
// no local record) and the SyncWorker applies the merge webhook: R is
// re-pointed to B and A is tombstoned as merged. Then the outbound worker
// records what HubSpot accepted. R must stay linked to B (the update's
// pushed state used to put the link to A back), both sides must keep the
// merge's values, and a later edit of B in HubSpot must reach R, not make a
// second local contact.
func TestMergeDuringUpdate(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		b := setup(t, options{dialect: d})

		rec, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "ada@example.com", "first_name": "Ada"})
		if err != nil {
			t.Fatal(err)
		}
		b.drain(t, b.worker(t, nil))
		a, ok, err := b.links.Lookup(ctx, "hubspot", "contacts", rec.ID)
		if err != nil || !ok {
			t.Fatalf("link of R: %v %v", ok, err)
		}
		// B exists in HubSpot only (no webhook URL yet: no local record).
		bID, err := b.sim.UserCreate("contacts", map[string]string{"email": "lovelace@example.com", "firstname": "Augusta"})
		if err != nil {
			t.Fatal(err)
		}

		in := b.inboundSide(t)

		b.clock.Advance(time.Second)
		cur, err := b.recs.Get(ctx, "contacts", rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.recs.Update(ctx, "contacts", rec.ID, cur.Version, map[string]any{"first_name": "Ada2"}); err != nil {
			t.Fatal(err)
		}
		h := &hookedHubSpot{HubSpot: b.client}
		h.after = func() {
			b.clock.Advance(time.Second)
			if err := b.sim.UserMerge("contacts", bID, a); err != nil {
				t.Error(err)
				return
			}
			if !deliverInbound(ctx, t, b, in) {
				return
			}
			if ext, _, _ := b.links.Lookup(ctx, "hubspot", "contacts", rec.ID); ext != bID {
				t.Errorf("after the merge webhook, R links to %q; want %s (test setup)", ext, bID)
			}
		}
		b.drain(t, b.worker(t, func(c *outbound.Config) { c.HubSpot = h }))

		ext, ok, err := b.links.Lookup(ctx, "hubspot", "contacts", rec.ID)
		if err != nil || !ok || ext != bID {
			t.Errorf("after the outbound cycle R links to %q (ok %v, err %v); want the survivor %s, not merged-away %s", ext, ok, err, bID, a)
		}
		// HubSpot applied R's edit to A, then merged A into B, whose own
		// first name the merge keeps; the merge's apply gave R B's values.
		// The edit, older than the merge, is not written again over B:
		// both sides keep the merge's result. (Before, the edit was sent
		// again to B, which then said Ada2 while R said Augusta.)
		got, err := b.recs.Get(ctx, "contacts", rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := b.sim.Object("contacts", bID); !ok || o.Properties["firstname"] != "Augusta" || got.Fields["first_name"] != "Augusta" {
			t.Errorf("survivor %s has firstname %q and R first_name %v; want both the merge's Augusta", bID, o.Properties["firstname"], got.Fields["first_name"])
		}
		// A later HubSpot edit of the survivor B.
		b.clock.Advance(time.Second)
		if err := b.sim.UserUpdate("contacts", bID, map[string]string{"lastname": "King"}); err != nil {
			t.Fatal(err)
		}
		if !deliverInbound(ctx, t, b, in) {
			t.FailNow()
		}
		all, err := b.recs.List(ctx, "contacts", records.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 1 {
			for _, r := range all {
				t.Logf("local contact %s %v", r.ID, r.Fields)
			}
			t.Errorf("%d local contacts; want 1 (R, linked to survivor B)", len(all))
		}
	})
}
