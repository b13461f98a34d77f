package outbound_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// liveContacts returns HubSpot's live contacts.
func liveContacts(b *bundle) []string {
	var out []string
	for _, o := range b.sim.Objects("contacts") {
		if !o.Archived {
			out = append(out, o.ID+" "+o.Properties["email"])
		}
	}
	return out
}

// TestHubSpotDeleteWhileLocalEditQueued: R is linked to HubSpot
// contact A and edited locally; before the outbound worker sends the edit, a
// HubSpot user deletes A and the SyncWorker deletes R. The queued update of R
// must not meet the 404 by unlinking R and upserting it afresh, which gave
// HubSpot a new live contact for a record deleted on both sides.
func TestHubSpotDeleteWhileLocalEditQueued(t *testing.T) {
	ctx := context.Background()
	b := setup(t, options{dialect: store.SQLite})
	rec, aID := syncedContact(t, b, "ada@example.com", "Ada")
	in := b.inboundSide(t)

	b.clock.Advance(time.Second)
	if _, err := b.recs.Update(ctx, "contacts", rec.ID, 1, map[string]any{"first_name": "Ada2"}); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Second)
	if err := b.sim.UserDelete("contacts", aID); err != nil {
		t.Fatal(err)
	}
	if !deliverInbound(ctx, t, b, in) {
		t.FailNow()
	}
	if _, err := b.recs.Get(ctx, "contacts", rec.ID); err == nil {
		t.Fatal("R not deleted by A's deletion (test setup)")
	}
	b.drain(t, b.worker(t, nil))
	drainInbound(t, b, in)

	all, _ := b.recs.List(ctx, "contacts", records.ListOptions{})
	if live := liveContacts(b); len(live) != len(all) {
		t.Errorf("HubSpot has live contacts %v, the app %d records: the deleted record came back in HubSpot", live, len(all))
	}
}

// TestMergeWhileLocalEditQueued: R_A is linked to A, R_B to B. R_A is
// edited locally; before the outbound worker sends the edit, A is merged
// into B and the SyncWorker deletes R_A (B has its own record). The queued
// update of R_A, now unlinked, must not be upserted by email, which finds B:
// R_A's values overwrote B in HubSpot, while the app's R_B kept B's values.
func TestMergeWhileLocalEditQueued(t *testing.T) {
	b := setup(t, options{dialect: store.SQLite})
	ra, aID := syncedContact(t, b, "ada@example.com", "Ada")
	rb, bID := syncedContact(t, b, "lovelace@example.com", "Augusta")
	mergeAwayWhileEditQueued(t, b, b.inboundSide(t), ra.ID, aID, rb.ID, bID)
}

// TestMergeWhileLocalEditOfHubSpotRecordQueued: as
// TestMergeWhileLocalEditQueued, but R_A was made from a contact a HubSpot
// user created, so no write of R_A's has reached HubSpot and it has no
// pushed state naming A. Its queued update, unlinked by the merge, was
// upserted by email and wrote R_A's values over B; the records service says
// R_A was deleted by HubSpot's change (outbound.SourceDeletedRecords), and
// the update completes unwritten.
func TestMergeWhileLocalEditOfHubSpotRecordQueued(t *testing.T) {
	for _, d := range dbtest.Dialects {
		t.Run(dbtest.Name(d), func(t *testing.T) {
			ctx := context.Background()
			b := setup(t, options{dialect: d})
			in := b.inboundSide(t)
			aID, err := b.sim.UserCreate("contacts", map[string]string{"email": "ada@example.com", "firstname": "Ada"})
			if err != nil {
				t.Fatal(err)
			}
			if !deliverInbound(ctx, t, b, in) {
				t.FailNow()
			}
			raID, ok, err := b.links.LookupRecord(ctx, "hubspot", "contacts", aID)
			if err != nil || !ok {
				t.Fatalf("no record made of HubSpot's contact %s: %v", aID, err)
			}
			rb, bID := syncedContact(t, b, "lovelace@example.com", "Augusta")
			mergeAwayWhileEditQueued(t, b, in, raID, aID, rb.ID, bID)
		})
	}
}

// mergeAwayWhileEditQueued edits R_A (raID, linked to aID) locally, merges
// aID into bID (R_B's, rbID, whose email is lovelace@example.com and first
// name Augusta) in HubSpot before the edit is sent, applies the merge, runs
// both sides until they settle, and checks that the edit was not written over
// the survivor: HubSpot's bID and R_B keep R_B's values.
func mergeAwayWhileEditQueued(t *testing.T, b *bundle, in *inbound.Worker, raID, aID, rbID, bID string) {
	t.Helper()
	ctx := context.Background()
	b.clock.Advance(time.Second)
	if _, err := b.recs.Update(ctx, "contacts", raID, 1, map[string]any{"first_name": "Ada2"}); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Second)
	if err := b.sim.UserMerge("contacts", bID, aID); err != nil {
		t.Fatal(err)
	}
	if !deliverInbound(ctx, t, b, in) {
		t.FailNow()
	}
	if _, err := b.recs.Get(ctx, "contacts", raID); err == nil {
		t.Fatal("R_A not deleted by the merge (test setup)")
	}
	b.drain(t, b.worker(t, nil))
	drainInbound(t, b, in)

	o, _ := b.sim.Object("contacts", bID)
	got, err := b.recs.Get(ctx, "contacts", rbID)
	if err != nil {
		t.Fatal(err)
	}
	if o.Properties["email"] != "lovelace@example.com" || o.Properties["firstname"] != "Augusta" {
		t.Errorf("HubSpot's survivor %s has email %q firstname %q: R_A's queued update was written over it", bID, o.Properties["email"], o.Properties["firstname"])
	}
	if got.Fields["first_name"] != o.Properties["firstname"] || got.Fields["email"] != o.Properties["email"] {
		t.Errorf("R_B (linked to %s) has %v; HubSpot's %s has email %q firstname %q", bID, got.Fields, bID, o.Properties["email"], o.Properties["firstname"])
	}
}

// TestMergeIntoUnseenSurvivorTakesItsValues: R is linked to HubSpot
// contact A. B exists only in HubSpot (no local record) and already has
// every property A has, so merging A into B moves none
// (numberOfPropertiesMoved 0). The SyncWorker re-points R to B and must
// read B, so R takes B's email and name: before, it kept A's, and the two
// sides differed on every mapped field with no later event to fix it.
func TestMergeIntoUnseenSurvivorTakesItsValues(t *testing.T) {
	ctx := context.Background()
	b := setup(t, options{dialect: store.SQLite})
	rec, aID := syncedContact(t, b, "ada@example.com", "Ada")
	bID, err := b.sim.UserCreate("contacts", map[string]string{"email": "lovelace@example.com", "firstname": "Augusta"})
	if err != nil {
		t.Fatal(err)
	}
	in := b.inboundSide(t)
	b.clock.Advance(time.Second)
	if err := b.sim.UserMerge("contacts", bID, aID); err != nil {
		t.Fatal(err)
	}
	if !deliverInbound(ctx, t, b, in) {
		t.FailNow()
	}
	b.drain(t, b.worker(t, nil))

	ext, _, _ := b.links.Lookup(ctx, "hubspot", "contacts", rec.ID)
	got, err := b.recs.Get(ctx, "contacts", rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := b.sim.Object("contacts", bID)
	t.Logf("R linked to %s (survivor %s): local %v; HubSpot email %q firstname %q", ext, bID, got.Fields, o.Properties["email"], o.Properties["firstname"])
	if ext != bID {
		t.Fatalf("R links to %q; want the survivor %s", ext, bID)
	}
	if got.Fields["email"] != o.Properties["email"] || got.Fields["first_name"] != o.Properties["firstname"] {
		t.Errorf("after the merge, R (linked to %s) has email %v first_name %v; HubSpot's %s has email %q firstname %q",
			bID, got.Fields["email"], got.Fields["first_name"], bID, o.Properties["email"], o.Properties["firstname"])
	}
}

// TestMergeDuringCreate: local record R is created; the outbound worker
// creates HubSpot contact X for it. Before the worker records the link R→X, a
// HubSpot user merges X into B (which has its own local record R2, created by
// B's creation webhook), and the SyncWorker applies the merge webhook: X is
// not linked yet, so it only tombstones X. Then the worker links R to X, a
// merged-away id: it must find the tombstone and have the merge applied
// again, which deletes R (B has its own record). Before, R and R2 both
// lived for HubSpot's one contact B.
func TestMergeDuringCreate(t *testing.T) {
	ctx := context.Background()
	b := setup(t, options{dialect: store.SQLite})
	in := b.inboundSide(t)

	bID, _ := madeInHubSpot(ctx, t, b, in)

	rec, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "ada@example.com", "first_name": "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	gl := &gatedLinks{Links: b.links}
	gl.before = func() { mergeTheOtherInto(ctx, t, b, in, bID) }
	b.drain(t, b.worker(t, func(c *outbound.Config) {
		c.Links = gl
		c.OnLinkedMergedAway = inbound.Remerger(b.st.Inbound(), b.mapping)
	}))
	drainInbound(t, b, in)

	live := 0
	for _, o := range b.sim.Objects("contacts") {
		if !o.Archived {
			live++
		}
	}
	all, err := b.recs.List(ctx, "contacts", records.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ext, _, _ := b.links.Lookup(ctx, "hubspot", "contacts", rec.ID)
	if len(all) != live {
		for _, r := range all {
			l, _, _ := b.links.Lookup(ctx, "hubspot", "contacts", r.ID)
			t.Logf("local contact %s linked to %q: %v", r.ID, l, r.Fields)
		}
		t.Errorf("%d local contacts for %d live HubSpot contacts; R is linked to %q, which was merged into %s", len(all), live, ext, bID)
	}
}

// madeInHubSpot has a HubSpot user create contact B (lovelace@example.com,
// Augusta) and the SyncWorker make its local record R2; it returns B's id and
// R2's, a second before the test goes on.
func madeInHubSpot(ctx context.Context, t *testing.T, b *bundle, in *inbound.Worker) (bID, r2 string) {
	t.Helper()
	bID, err := b.sim.UserCreate("contacts", map[string]string{"email": "lovelace@example.com", "firstname": "Augusta"})
	if err != nil {
		t.Fatal(err)
	}
	if !deliverInbound(ctx, t, b, in) {
		t.FailNow()
	}
	r2, _, err = b.links.LookupRecord(ctx, "hubspot", "contacts", bID)
	if err != nil || r2 == "" {
		t.Fatalf("B's record: %q, %v", r2, err)
	}
	b.clock.Advance(time.Second)
	return bID, r2
}

// mergeTheOtherInto merges the one other live contact, the one created for R,
// into bID as a HubSpot user would, a second later, and has the SyncWorker
// in apply the merge's webhook (none when in is nil: the webhook waits).
func mergeTheOtherInto(ctx context.Context, t *testing.T, b *bundle, in *inbound.Worker, bID string) {
	t.Helper()
	var xID string
	for _, o := range b.sim.Objects("contacts") {
		if o.ID != bID && !o.Archived {
			xID = o.ID
		}
	}
	if xID == "" {
		t.Error("no contact created for R")
		return
	}
	b.clock.Advance(time.Second)
	if err := b.sim.UserMerge("contacts", bID, xID); err != nil {
		t.Error(err)
		return
	}
	if in != nil {
		deliverInbound(ctx, t, b, in)
	}
}

// syncedContact inserts a local contact and drains the outbound worker, so
// that HubSpot has it; it returns the record and its HubSpot id.
func syncedContact(t *testing.T, b *bundle, email, firstName string) (records.Record, string) {
	t.Helper()
	ctx := context.Background()
	rec, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": email, "first_name": firstName})
	if err != nil {
		t.Fatal(err)
	}
	b.drain(t, b.worker(t, nil))
	id, ok, err := b.links.Lookup(ctx, "hubspot", "contacts", rec.ID)
	if err != nil || !ok {
		t.Fatalf("contact %s not linked after the drain: %v", email, err)
	}
	return rec, id
}

// lostThenHooked answers its first BatchUpsert as a dropped connection after
// HubSpot applied it (the answer lost), and runs before ahead of the second.
type lostThenHooked struct {
	outbound.HubSpot
	calls  int
	before func()
	// reversed lists the results of the answers after the first in the
	// opposite order (HubSpot promises none).
	reversed bool
}

func (h *lostThenHooked) BatchUpsert(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpsertInput) (*hubspot.BatchResult, error) {
	h.calls++
	if h.calls == 2 && h.before != nil {
		h.before()
	}
	res, err := h.HubSpot.BatchUpsert(ctx, t, in)
	if h.calls == 1 && err == nil {
		return nil, fmt.Errorf("read the answer: %w", io.ErrUnexpectedEOF)
	}
	if h.reversed && res != nil {
		slices.Reverse(res.Results)
	}
	return res, err
}

// BatchReadWithHistory forwards to the wrapped client's (outbound.HistoryReader).
func (h *lostThenHooked) BatchReadWithHistory(ctx context.Context, t hubspot.ObjectType, ids []string, properties, history []string) (*hubspot.BatchResult, error) {
	hr, ok := h.HubSpot.(outbound.HistoryReader)
	if !ok {
		return nil, errors.New("the wrapped client reads no histories")
	}
	return hr.BatchReadWithHistory(ctx, t, ids, properties, history)
}

// TestMergeAwayDuringCreateRetry: local record R's create reaches HubSpot
// (contact X) but its answer is lost. While the create's retry is under way,
// a HubSpot user merges X into B, which has its own local record R2, and the
// SyncWorker applies the merge: X has no link, and B's additional emails
// find R, which is merged away into R2. The retry's upsert by R's email
// lands on B (HubSpot finds B by it) and writes R's values there. The
// worker must write R2's values over B again, and not dead-letter R; before,
// B kept R's values while R2 kept B's.
func TestMergeAwayDuringCreateRetry(t *testing.T) {
	ctx := context.Background()
	b := setup(t, options{dialect: store.SQLite})
	in := b.inboundSide(t)
	bID, r2 := madeInHubSpot(ctx, t, b, in)
	rec, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "ada@example.com", "first_name": "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	hs := &lostThenHooked{HubSpot: b.client}
	hs.before = func() {
		mergeTheOtherInto(ctx, t, b, in, bID)
		if _, err := b.recs.Get(ctx, "contacts", rec.ID); !errors.Is(err, records.ErrNotFound) {
			t.Errorf("R after the merge was applied: %v; want it merged away (found by B's additional emails)", err)
		}
	}
	b.drain(t, b.worker(t, func(c *outbound.Config) { c.HubSpot = hs }))
	drainInbound(t, b, in)
	if hs.calls < 2 {
		t.Fatalf("%d upsert calls; want the create and its retry", hs.calls)
	}
	if c := b.counts(t); c[store.StatusFailed] != 0 {
		t.Errorf("outbound statuses %v; want no dead letter", c)
	}
	o, ok := b.sim.Object("contacts", bID)
	if !ok || o.Properties["firstname"] != "Augusta" || o.Properties["email"] != "lovelace@example.com" {
		t.Errorf("B = %v; want R2's lovelace@example.com and Augusta written over the retry's ada@example.com and Ada", o.Properties)
	}
	got, err := b.recs.Get(ctx, "contacts", r2)
	if err != nil || got.Fields["first_name"] != o.Properties["firstname"] {
		t.Errorf("R2 = %+v, %v; want it to agree with B (%q)", got, err, o.Properties["firstname"])
	}
}

// hookedUpdate runs before ahead of its first BatchUpdate.
type hookedUpdate struct {
	outbound.HubSpot
	before func()
}

func (h *hookedUpdate) BatchUpdate(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpdateInput) (*hubspot.BatchResult, error) {
	if f := h.before; f != nil {
		h.before = nil
		f()
	}
	return h.HubSpot.BatchUpdate(ctx, t, in)
}

// TestMergeAwayBeforeCreateRetry: local record R's create reaches HubSpot
// (contact X) but its answer is lost, and a HubSpot user merges X into B,
// which has its own local record R2. The create's retry runs before the
// merge's webhook is applied: its upsert by R's email lands on B, writes R's
// values there, and cannot link R to B (R2 has it). The worker must write
// R2's values over B again and dead-letter R; the merge's webhook, applied
// before or after that write, must then take R as merged into R2 (B's
// additional emails find it), and R2 must keep its own values, not take
// R's from the read of B. Before, R stayed (a local contact with no HubSpot
// object) and B kept R's values. R's dead letter is re-queued by the merge
// that takes R, and resolved without a call.
func TestMergeAwayBeforeCreateRetry(t *testing.T) {
	for _, tc := range []struct {
		name        string
		beforeWrite bool // the merge's webhook is applied before R2 is written over B again
	}{
		{"merge applied after the repair", false},
		{"merge applied before the repair", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b := setup(t, options{dialect: store.SQLite})
			in := b.inboundSide(t)
			bID, r2 := madeInHubSpot(ctx, t, b, in)
			rec, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "ada@example.com", "first_name": "Ada"})
			if err != nil {
				t.Fatal(err)
			}
			hs := &lostThenHooked{HubSpot: b.client}
			hs.before = func() { mergeTheOtherInto(ctx, t, b, nil, bID) }
			up := &hookedUpdate{HubSpot: hs}
			if tc.beforeWrite {
				up.before = func() {
					if o, _ := b.sim.Object("contacts", bID); o.Properties["firstname"] != "Ada" {
						t.Errorf("B before the repair = %v; want the retry's Ada on it", o.Properties)
					}
					deliverInbound(ctx, t, b, in)
				}
			}
			b.drain(t, b.worker(t, func(c *outbound.Config) { c.HubSpot = up }))
			if hs.calls < 2 {
				t.Fatalf("%d upsert calls; want the create and its retry", hs.calls)
			}
			dl, err := b.st.Outbound().DeadLetters(ctx, store.DeadLetterFilter{Key: "hubspot", Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.beforeWrite:
				// The merge took R after its create was dead-lettered, and
				// re-queued the dead letter, which the drain resolved.
				if len(dl) != 0 {
					t.Errorf("dead letters %+v; want none: the merge took R", dl)
				}
			case len(dl) != 1 || dl[0].RecordID != rec.ID || !strings.Contains(dl[0].ErrorMessage, "merged") || !strings.Contains(dl[0].ErrorMessage, r2):
				t.Errorf("dead letters %+v; want R's create, naming R2 and the likely merge", dl)
			}
			drainInbound(t, b, in)
			if !deliverInbound(ctx, t, b, in) {
				t.FailNow()
			}
			if _, err := b.recs.Get(ctx, "contacts", rec.ID); !errors.Is(err, records.ErrNotFound) {
				t.Errorf("R after the merge was applied: %v; want it merged away into R2", err)
			}
			// The merge took R, so R's dead letter asks nothing of anyone
			// any more: it is resolved without a call.
			calls := b.sim.Counters().Requests
			b.drain(t, b.worker(t, nil))
			if dl, err := b.st.Outbound().DeadLetters(ctx, store.DeadLetterFilter{Key: "hubspot", Limit: 10}); err != nil || len(dl) != 0 {
				t.Errorf("dead letters after the merge took R: %+v, %v; want none", dl, err)
			}
			if got := b.sim.Counters().Requests; got != calls {
				t.Errorf("%d HubSpot calls resolving R's dead letter; want none", got-calls)
			}
			o, ok := b.sim.Object("contacts", bID)
			if !ok || o.Properties["firstname"] != "Augusta" || o.Properties["email"] != "lovelace@example.com" {
				t.Errorf("B = %v; want R2's lovelace@example.com and Augusta written over the retry's ada@example.com and Ada", o.Properties)
			}
			got, err := b.recs.Get(ctx, "contacts", r2)
			if err != nil || got.Fields["first_name"] != "Augusta" || got.Fields["email"] != "lovelace@example.com" {
				t.Errorf("R2 = %+v, %v; want its own Augusta and lovelace@example.com kept", got, err)
			}
			if _, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "ada@example.com"}); !errors.Is(err, records.ErrEmailTaken) {
				t.Errorf("a new contact with R's email: %v; want it taken (held by R2, as B keeps it)", err)
			}
			if c := b.counts(t); c[store.StatusPending]+c[store.StatusProcessing] != 0 {
				t.Errorf("outbound queue %v; want nothing left to do", c)
			}
		})
	}
}

// refusedUpdate answers every BatchUpdate as HubSpot answers a value it
// refuses (400), which dead-letters the update.
type refusedUpdate struct{ outbound.HubSpot }

func (refusedUpdate) BatchUpdate(context.Context, hubspot.ObjectType, []hubspot.UpdateInput) (*hubspot.BatchResult, error) {
	return nil, &hubspot.Error{StatusCode: 400, Kind: hubspot.KindValidation, Message: "Property values were not valid"}
}

// TestHubSpotDeleteResolvesDeadLetter: R's update was dead-lettered (HubSpot
// refused a value); a HubSpot user then deletes R's contact, and the
// SyncWorker deletes R. The dead letter asked an operator to fix the value;
// HubSpot's deletion made that moot, so it is re-queued and resolved as a
// queued edit of a deleted contact is (TestHubSpotDeleteWhileLocalEditQueued),
// rather than waiting for a discard, and R's contact stays deleted.
func TestHubSpotDeleteResolvesDeadLetter(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		b := setup(t, options{dialect: d})
		rec, aID := syncedContact(t, b, "ada@example.com", "Ada")
		in := b.inboundSide(t)
		b.clock.Advance(time.Second)
		if _, err := b.recs.Update(ctx, "contacts", rec.ID, 1, map[string]any{"first_name": "Ada2"}); err != nil {
			t.Fatal(err)
		}
		b.drain(t, b.worker(t, func(c *outbound.Config) { c.HubSpot = refusedUpdate{b.client} }))
		if dl, err := b.st.Outbound().DeadLetters(ctx, store.DeadLetterFilter{Key: "hubspot"}); err != nil || len(dl) != 1 {
			t.Fatalf("dead letters %+v, %v; want R's refused update (test setup)", dl, err)
		}
		b.clock.Advance(time.Second)
		if err := b.sim.UserDelete("contacts", aID); err != nil {
			t.Fatal(err)
		}
		if !deliverInbound(ctx, t, b, in) {
			t.FailNow()
		}
		if _, err := b.recs.Get(ctx, "contacts", rec.ID); !errors.Is(err, records.ErrNotFound) {
			t.Fatalf("R after HubSpot deleted its contact: %v; want it deleted", err)
		}
		b.sim.ResetCounters()
		b.drain(t, b.worker(t, nil))
		if dl, err := b.st.Outbound().DeadLetters(ctx, store.DeadLetterFilter{Key: "hubspot"}); err != nil || len(dl) != 0 {
			t.Errorf("dead letters after HubSpot deleted R's contact: %+v, %v; want none", dl, err)
		}
		if c := b.counts(t); c[store.StatusPending]+c[store.StatusProcessing]+c[store.StatusFailed] != 0 {
			t.Errorf("outbound queue %v; want everything finished", c)
		}
		// As a queued edit of a deleted contact: at most its update meets
		// the deletion's 404; nothing is created or upserted.
		for path := range b.sim.Counters().RequestsByPath {
			if !strings.HasSuffix(path, "/batch/update") {
				t.Errorf("call %s resolving the dead letter; want at most the update", path)
			}
		}
		if live := liveContacts(b); len(live) != 0 {
			t.Errorf("HubSpot's live contacts %v; want none: R's contact stays deleted", live)
		}
	})
}

// TestHubSpotDeleteOfAnUnrecordedCreate: local record R's create reaches
// HubSpot (object X) but its answer is lost, so R has no link. A HubSpot
// user deletes X, and the SyncWorker applies the deletion before the
// create's retry: X's id is unknown here, so the worker reads the deleted
// object's id property (the contact's email; the record id hubsync wrote on
// a company), which finds R, whose write may have reached HubSpot, and R is
// deleted. The retry then finds R deleted by HubSpot and makes no object.
// Before, the deletion found no record, and the retry's upsert made X
// again: a deletion undone.
func TestHubSpotDeleteOfAnUnrecordedCreate(t *testing.T) {
	for _, tc := range []struct {
		typ    string
		fields map[string]any
	}{
		{"contacts", map[string]any{"email": "ada@example.com", "first_name": "Ada"}},
		{"companies", map[string]any{"name": "Acme"}},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, d store.Dialect) {
				ctx := context.Background()
				b := setup(t, options{dialect: d})
				in := b.inboundSide(t)
				rec, err := b.recs.Insert(ctx, tc.typ, tc.fields)
				if err != nil {
					t.Fatal(err)
				}
				lost := &lostAnswers{HubSpot: b.client}
				if _, err := b.worker(t, func(c *outbound.Config) { c.HubSpot = lost }).RunOnce(ctx); err != nil {
					t.Logf("cycle: %v", err)
				}
				objs := live(b, tc.typ)
				if len(objs) != 1 || lost.lost == 0 {
					t.Fatalf("HubSpot %s after the lost answer: %v (%d answers lost); want the one object the create made (test setup)", tc.typ, objs, lost.lost)
				}
				if _, ok, _ := b.links.Lookup(ctx, "hubspot", tc.typ, rec.ID); ok {
					t.Fatal("R is linked after its create's answer was lost (test setup)")
				}
				b.clock.Advance(10 * time.Second)
				if err := b.sim.UserDelete(tc.typ, objs[0]); err != nil {
					t.Fatal(err)
				}
				if !deliverInbound(ctx, t, b, in) {
					t.FailNow()
				}
				if _, err := b.recs.Get(ctx, tc.typ, rec.ID); !errors.Is(err, records.ErrNotFound) {
					t.Errorf("R after HubSpot deleted the object its create made: %v; want it deleted", err)
				}
				b.clock.Advance(time.Minute)
				b.drain(t, b.worker(t, nil))
				if objs := live(b, tc.typ); len(objs) != 0 {
					t.Errorf("HubSpot's live %s after the create's retry: %v; want none: the deletion stands", tc.typ, objs)
				}
				if c := b.counts(t); c[store.StatusPending]+c[store.StatusProcessing]+c[store.StatusFailed] != 0 {
					t.Errorf("outbound queue %v; want everything finished", c)
				}
			})
		})
	}
}

// lostAnswers answers every batch create or upsert that HubSpot applied as
// a dropped connection (the answer lost), counting them.
type lostAnswers struct {
	outbound.HubSpot
	lost int
}

func (h *lostAnswers) BatchUpsert(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpsertInput) (*hubspot.BatchResult, error) {
	if _, err := h.HubSpot.BatchUpsert(ctx, t, in); err != nil {
		return nil, err
	}
	h.lost++
	return nil, fmt.Errorf("read the answer: %w", io.ErrUnexpectedEOF)
}

func (h *lostAnswers) BatchCreate(ctx context.Context, t hubspot.ObjectType, in []hubspot.CreateInput) (*hubspot.BatchResult, error) {
	if _, err := h.HubSpot.BatchCreate(ctx, t, in); err != nil {
		return nil, err
	}
	h.lost++
	return nil, fmt.Errorf("read the answer: %w", io.ErrUnexpectedEOF)
}

// live returns the ids of HubSpot's live objects of type typ.
func live(b *bundle, typ string) []string {
	var out []string
	for _, o := range b.sim.Objects(typ) {
		if !o.Archived {
			out = append(out, o.ID)
		}
	}
	return out
}

// TestHubSpotDeleteBetweenLostAttempts: R's create reaches HubSpot (X) with
// its answer lost; a HubSpot user deletes X; the create's retry, before the
// deletion is applied here, finds no contact by R's email and makes Y, its
// answer lost too. The deletion, applied then, must not take R: a write of R
// was handed to a worker after X's deletion, and may have made an object
// nothing here knows (Y). R stays, and its next retry finds Y by the email
// and links it: every live contact has its record. (Taking R left Y live
// with no record, found by the model test, seed 2267.)
func TestHubSpotDeleteBetweenLostAttempts(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		b := setup(t, options{dialect: d})
		in := b.inboundSide(t)
		rec, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "ada@example.com", "first_name": "Ada"})
		if err != nil {
			t.Fatal(err)
		}
		lost := &lostAnswers{HubSpot: b.client}
		w := b.worker(t, func(c *outbound.Config) { c.HubSpot = lost })
		if _, err := w.RunOnce(ctx); err != nil {
			t.Logf("cycle: %v", err)
		}
		objs := live(b, "contacts")
		if len(objs) != 1 {
			t.Fatalf("HubSpot contacts after the first lost answer: %v; want X (test setup)", objs)
		}
		b.clock.Advance(10 * time.Second)
		if err := b.sim.UserDelete("contacts", objs[0]); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(time.Minute) // the first attempt's backoff
		if _, err := w.RunOnce(ctx); err != nil {
			t.Logf("cycle: %v", err)
		}
		if objs := live(b, "contacts"); len(objs) != 1 || lost.lost != 2 {
			t.Fatalf("HubSpot contacts after the retry: %v (%d answers lost); want Y, its answer lost (test setup)", objs, lost.lost)
		}
		if !deliverInbound(ctx, t, b, in) {
			t.FailNow()
		}
		if _, err := b.recs.Get(ctx, "contacts", rec.ID); err != nil {
			t.Fatalf("R after X's deletion was applied: %v; want it kept (a write since may have made Y)", err)
		}
		b.clock.Advance(time.Minute)
		b.drain(t, b.worker(t, nil))
		objs = live(b, "contacts")
		id, ok, err := b.links.Lookup(ctx, "hubspot", "contacts", rec.ID)
		if err != nil || !ok || len(objs) != 1 || objs[0] != id {
			t.Errorf("HubSpot's live contacts %v, R linked to %q (%v, %v); want R linked to the one live contact", objs, id, ok, err)
		}
	})
}

// TestHubSpotDeleteAndRecreateDuringCreateRetry: R's create reaches HubSpot
// (X) with its answer lost; while the create's retry is under way, a HubSpot
// user deletes X, the deletion is applied here, and the user makes a new
// contact Z with R's email; the retry's upsert finds Z by the email and
// writes over it. Z is the user's, not one hubsync made: it must not be
// archived.
func TestHubSpotDeleteAndRecreateDuringCreateRetry(t *testing.T) {
	ctx := context.Background()
	b := setup(t, options{dialect: store.SQLite})
	in := b.inboundSide(t)
	if _, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "ada@example.com", "first_name": "Ada"}); err != nil {
		t.Fatal(err)
	}
	var zID string
	hs := &lostThenHooked{HubSpot: b.client}
	hs.before = func() {
		objs := live(b, "contacts")
		if len(objs) != 1 {
			t.Errorf("HubSpot contacts before the retry: %v; want the one the lost create made", objs)
			return
		}
		if err := b.sim.UserDelete("contacts", objs[0]); err != nil {
			t.Error(err)
			return
		}
		deliverInbound(ctx, t, b, in)
		b.clock.Advance(time.Second)
		var err error
		if zID, err = b.sim.UserCreate("contacts", map[string]string{"email": "ada@example.com", "firstname": "Zed"}); err != nil {
			t.Error(err)
		}
	}
	b.drain(t, b.worker(t, func(c *outbound.Config) { c.HubSpot = hs }))
	deliverInbound(ctx, t, b, in)
	b.drain(t, b.worker(t, nil))
	if zID == "" {
		t.Fatal("Z was not made (test setup)")
	}
	if objs := live(b, "contacts"); !slices.Contains(objs, zID) {
		t.Errorf("HubSpot's live contacts %v; want the user's Z (%s) kept", objs, zID)
	}
}

// failingRepair is the records service with RepairOverwrite failing, as a
// store error would.
type failingRepair struct{ *records.Service }

func (failingRepair) RepairOverwrite(context.Context, string, string, map[string]any, time.Time) error {
	return errors.New("disk full")
}

// TestMergeAwayDuringCreateRetryRepairFails: as TestMergeAwayDuringCreateRetry,
// but writing R2 over B again cannot be queued. R's write is not completed as
// if B were repaired (nothing would ever undo R's values there): it is
// dead-lettered, naming R2 and what to do.
func TestMergeAwayDuringCreateRetryRepairFails(t *testing.T) {
	ctx := context.Background()
	b := setup(t, options{dialect: store.SQLite})
	in := b.inboundSide(t)
	bID, r2 := madeInHubSpot(ctx, t, b, in)
	if _, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "ada@example.com", "first_name": "Ada"}); err != nil {
		t.Fatal(err)
	}
	hs := &lostThenHooked{HubSpot: b.client}
	hs.before = func() { mergeTheOtherInto(ctx, t, b, in, bID) }
	b.drain(t, b.worker(t, func(c *outbound.Config) {
		c.HubSpot = hs
		c.LocalRecords = failingRepair{b.recs}
	}))
	dl, err := b.st.Outbound().DeadLetters(ctx, store.DeadLetterFilter{Key: "hubspot", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(dl) != 1 || !strings.Contains(dl[0].ErrorMessage, r2) || !strings.Contains(dl[0].ErrorMessage, "failed") || !strings.Contains(dl[0].ErrorMessage, "save") {
		t.Fatalf("dead letters %v; want R's write, naming R2 (%s), the failed repair and what to do", dl, r2)
	}
}
