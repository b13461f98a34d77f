package outbound_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// TestMergeAppliedAfterThe404: R_A is linked to HubSpot contact A, R_B to
// B. A HubSpot user merges A into B; before the merge's webhook is applied,
// the outbound worker sends R_A's local edit and meets A's 404. It must keep
// R_A's link and wait: the SyncWorker then finds R_A by it and deletes it
// (B has its own record), and the edit is superseded. Before, the 404
// unlinked R_A at once: the merge found no record to delete, R_A lived on
// unlinked, and its fresh upsert by email found B and wrote over it.
func TestMergeAppliedAfterThe404(t *testing.T) {
	ctx := context.Background()
	b := setup(t, options{dialect: store.SQLite})
	ra, aID := syncedContact(t, b, "ada@example.com", "Ada")
	rb, bID := syncedContact(t, b, "lovelace@example.com", "Augusta")
	in := b.inboundSide(t)

	editLocally(t, b, ra.ID)
	b.clock.Advance(time.Second)
	if err := b.sim.UserMerge("contacts", bID, aID); err != nil {
		t.Fatal(err)
	}
	w := b.worker(t, nil)
	if _, err := w.RunOnce(ctx); err != nil {
		t.Logf("cycle: %v", err)
	}
	if ext, ok, _ := b.links.Lookup(ctx, "hubspot", "contacts", ra.ID); !ok || ext != aID {
		t.Fatalf("after the 404, R_A links to %q (%v); want it kept on %s", ext, ok, aID)
	}
	if !deliverInbound(ctx, t, b, in) {
		t.FailNow()
	}
	b.drain(t, w)
	drainInbound(t, b, in)

	if _, err := b.recs.Get(ctx, "contacts", ra.ID); err == nil {
		t.Error("R_A lives on after A was merged into B, which has its own record")
	}
	o, _ := b.sim.Object("contacts", bID)
	if o.Properties["email"] != "lovelace@example.com" || o.Properties["firstname"] != "Augusta" {
		t.Errorf("HubSpot's survivor %s has email %q firstname %q; want lovelace@example.com, Augusta", bID, o.Properties["email"], o.Properties["firstname"])
	}
	got, err := b.recs.Get(ctx, "contacts", rb.ID)
	if err != nil || got.Fields["email"] != "lovelace@example.com" || got.Fields["first_name"] != "Augusta" {
		t.Errorf("R_B = %v, %v; want lovelace@example.com, Augusta", got.Fields, err)
	}
	if n := b.counts(t)[store.StatusFailed]; n != 0 {
		t.Errorf("%d dead letters", n)
	}
}

// TestDeletionAppliedAfterThe404: as above, with A deleted in HubSpot: R
// is deleted when the deletion is applied, not left unlinked and created
// again in HubSpot.
func TestDeletionAppliedAfterThe404(t *testing.T) {
	ctx := context.Background()
	b := setup(t, options{dialect: store.SQLite})
	rec, aID := syncedContact(t, b, "ada@example.com", "Ada")
	in := b.inboundSide(t)

	editLocally(t, b, rec.ID)
	b.clock.Advance(time.Second)
	if err := b.sim.UserDelete("contacts", aID); err != nil {
		t.Fatal(err)
	}
	w := b.worker(t, nil)
	if _, err := w.RunOnce(ctx); err != nil {
		t.Logf("cycle: %v", err)
	}
	if !deliverInbound(ctx, t, b, in) {
		t.FailNow()
	}
	b.drain(t, w)
	drainInbound(t, b, in)

	if _, err := b.recs.Get(ctx, "contacts", rec.ID); err == nil {
		t.Error("R lives on after HubSpot deleted its contact")
	}
	if live := liveContacts(b); len(live) != 0 {
		t.Errorf("HubSpot has live contacts %v; want none", live)
	}
	if n := b.counts(t)[store.StatusFailed]; n != 0 {
		t.Errorf("%d dead letters", n)
	}
}

// TestDeletionAppliedAfterTheWaits: the deletion's webhook is applied only
// once the 404 waits are over and the worker has unlinked the record to
// write it afresh (a SyncWorker backlog longer than the waits; seed 40011 of
// the model test). The deletion, finding no link, and a write of the record
// handed to a worker since it, leaves the record here; the record then gets
// an object again, rather than living on here with none in HubSpot.
func TestDeletionAppliedAfterTheWaits(t *testing.T) {
	ctx := context.Background()
	b := setup(t, options{dialect: store.SQLite})
	rec, aID := syncedContact(t, b, "ada@example.com", "Ada")
	in := b.inboundSide(t)

	editLocally(t, b, rec.ID)
	b.clock.Advance(time.Second)
	if err := b.sim.UserDelete("contacts", aID); err != nil {
		t.Fatal(err)
	}
	w := b.worker(t, nil)
	for i := 0; ; i++ {
		if _, ok, _ := b.links.Lookup(ctx, "hubspot", "contacts", rec.ID); !ok {
			break
		}
		if i > 3*outbound.NotFoundWaits {
			t.Fatal("the record was never unlinked to be written afresh")
		}
		if _, err := w.RunOnce(ctx); err != nil {
			t.Logf("cycle: %v", err)
		}
		b.clock.Advance(outbound.NotFoundWaitDefault)
	}
	if !deliverInbound(ctx, t, b, in) {
		t.FailNow()
	}
	b.drain(t, w)
	drainInbound(t, b, in)

	got, err := b.recs.Get(ctx, "contacts", rec.ID)
	if err != nil {
		t.Fatalf("R after a deletion that found it unlinked: %v; want it kept (the deletion did not take it)", err)
	}
	ext, ok, _ := b.links.Lookup(ctx, "hubspot", "contacts", rec.ID)
	if !ok || ext == aID {
		t.Fatalf("R links to %q (%v); want a new HubSpot contact, as R lives here", ext, ok)
	}
	if o, _ := b.sim.Object("contacts", ext); o.Archived || o.Properties["firstname"] != got.Fields["first_name"] {
		t.Errorf("R's new contact %s: archived %v, firstname %q; want live with R's %q", ext, o.Archived, o.Properties["firstname"], got.Fields["first_name"])
	}
	if n := b.counts(t)[store.StatusFailed]; n != 0 {
		t.Errorf("%d dead letters", n)
	}
}

// TestNotFoundWithoutWebhookWritesAfresh: an object gone from HubSpot with
// no deletion or merge ever applied (its webhook lost) is written afresh
// once the waits are over, as before.
func TestNotFoundWithoutWebhookWritesAfresh(t *testing.T) {
	ctx := context.Background()
	b := setup(t, options{dialect: store.SQLite})
	rec, aID := syncedContact(t, b, "ada@example.com", "Ada")
	editLocally(t, b, rec.ID)
	if err := b.sim.UserDelete("contacts", aID); err != nil {
		t.Fatal(err)
	}
	b.drain(t, b.worker(t, nil))
	ext, ok, _ := b.links.Lookup(ctx, "hubspot", "contacts", rec.ID)
	if !ok || ext == aID {
		t.Fatalf("R links to %q (%v); want a new HubSpot contact", ext, ok)
	}
	if o, _ := b.sim.Object("contacts", ext); o.Properties["firstname"] != "Ada2" {
		t.Errorf("the new contact has firstname %q; want Ada2", o.Properties["firstname"])
	}
}

// unavailableClient is a HubSpot that answers every call 503.
func unavailableClient(t *testing.T) *hubspot.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"status":"error","message":"unavailable","category":"INTERNAL_ERROR"}`))
	}))
	t.Cleanup(srv.Close)
	c, err := hubspot.NewClient(hubspot.Config{BaseURL: srv.URL, AccessToken: hubspotsim.AccessTokenDefault, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMergeAfterTransientFailuresStillWaits: the update failed twice on a
// HubSpot outage before it met the 404; the wait is no failure count, so it
// still keeps the link for the merge.
func TestMergeAfterTransientFailuresStillWaits(t *testing.T) {
	ctx := context.Background()
	b := setup(t, options{dialect: store.SQLite})
	ra, aID := syncedContact(t, b, "ada@example.com", "Ada")
	_, bID := syncedContact(t, b, "lovelace@example.com", "Augusta")
	in := b.inboundSide(t)
	editLocally(t, b, ra.ID)
	down := b.worker(t, func(c *outbound.Config) { c.HubSpot = unavailableClient(t) })
	for range 2 {
		_, _ = down.RunOnce(ctx)
		b.clock.Advance(time.Minute)
	}
	if err := b.sim.UserMerge("contacts", bID, aID); err != nil {
		t.Fatal(err)
	}
	w := b.worker(t, nil)
	_, _ = w.RunOnce(ctx) // meets A's 404
	if ext, ok, _ := b.links.Lookup(ctx, "hubspot", "contacts", ra.ID); !ok || ext != aID {
		t.Fatalf("after the 404, R_A links to %q (%v); want it kept on %s", ext, ok, aID)
	}
	if !deliverInbound(ctx, t, b, in) {
		t.FailNow()
	}
	b.drain(t, w)
	drainInbound(t, b, in)
	if _, err := b.recs.Get(ctx, "contacts", ra.ID); err == nil {
		t.Errorf("R_A lives on after A was merged into B (live in HubSpot: %v)", liveContacts(b))
	}
}

// TestNotFoundWaitUsesNoAttempt: with a store that dead-letters after three
// attempts, an object gone without a deletion or merge applied is still
// written afresh after the waits, not dead-lettered by them.
func TestNotFoundWaitUsesNoAttempt(t *testing.T) {
	ctx := context.Background()
	b := setup(t, options{dialect: store.SQLite})
	st, err := hubsync.NewStore(b.db.DB, b.db.Dialect, store.Config{Now: b.clock.Now,
		Retry: store.RetryPolicy{MaxAttempts: 2, BackoffBase: time.Second, BackoffMax: 4 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	b.st, b.links = st, links.New(st)
	if b.recs, err = records.New(st, b.links, records.Config{}); err != nil {
		t.Fatal(err)
	}
	rec, aID := syncedContact(t, b, "ada@example.com", "Ada")
	editLocally(t, b, rec.ID)
	if err := b.sim.UserDelete("contacts", aID); err != nil {
		t.Fatal(err)
	}
	b.drain(t, b.worker(t, nil))
	if n := b.counts(t)[store.StatusFailed]; n != 0 {
		t.Errorf("%d dead letters; want the record written afresh", n)
	}
	if ext, ok, _ := b.links.Lookup(ctx, "hubspot", "contacts", rec.ID); !ok || ext == aID {
		t.Errorf("R links to %q (%v); want a new HubSpot contact", ext, ok)
	}
}

// editLocally changes a synced contact's first_name (at version 1) a second
// later, so that an outbound update of it waits.
func editLocally(t *testing.T, b *bundle, id string) {
	t.Helper()
	b.clock.Advance(time.Second)
	if _, err := b.recs.Update(context.Background(), "contacts", id, 1, map[string]any{"first_name": "Ada2"}); err != nil {
		t.Fatal(err)
	}
}

// TestMergeWithoutWebhookIsReadAndApplied: as TestMergeAppliedAfterThe404,
// but the merge's webhook never comes (lost, or the SyncWorker is down for
// longer than the waits). The 404's read finds A merged into B (a merged id
// reads as its survivor) and queues the merge (OnLinkedMergedAway); R_A
// keeps its link and waits, past every NotFoundWait, until the SyncWorker
// applies it. Before, R_A was unlinked after the waits and upserted by
// email, which found B and wrote R_A's edit over R_B's contact.
func TestMergeWithoutWebhookIsReadAndApplied(t *testing.T) {
	ctx := context.Background()
	b := setup(t, options{dialect: store.SQLite})
	ra, aID := syncedContact(t, b, "ada@example.com", "Ada")
	rb, bID := syncedContact(t, b, "lovelace@example.com", "Augusta")

	editLocally(t, b, ra.ID)
	b.clock.Advance(time.Second)
	if err := b.sim.UserMerge("contacts", bID, aID); err != nil { // no webhook URL: its webhook is lost
		t.Fatal(err)
	}
	w := b.worker(t, func(c *outbound.Config) { c.OnLinkedMergedAway = inbound.Remerger(b.st.Inbound(), b.mapping) })
	cyclesPastTheWaits(t, b, w)
	if ext, ok, _ := b.links.Lookup(ctx, "hubspot", "contacts", ra.ID); !ok || ext != aID {
		t.Fatalf("while the merge waits to be applied, R_A links to %q (%v); want it kept on %s", ext, ok, aID)
	}
	if o, _ := b.sim.Object("contacts", bID); o.Properties["firstname"] != "Augusta" {
		t.Fatalf("HubSpot's survivor %s has firstname %q before the merge was applied; want Augusta", bID, o.Properties["firstname"])
	}

	in := b.inboundSide(t) // the SyncWorker is back
	drainInbound(t, b, in)
	b.drain(t, w)

	if _, err := b.recs.Get(ctx, "contacts", ra.ID); err == nil {
		t.Error("R_A lives on after A was merged into B, which has its own record")
	}
	if live := liveContacts(b); len(live) != 1 {
		t.Errorf("HubSpot has live contacts %v; want B only", live)
	}
	o, _ := b.sim.Object("contacts", bID)
	if o.Properties["email"] != "lovelace@example.com" || o.Properties["firstname"] != "Augusta" {
		t.Errorf("HubSpot's survivor %s has email %q firstname %q; want lovelace@example.com, Augusta", bID, o.Properties["email"], o.Properties["firstname"])
	}
	got, err := b.recs.Get(ctx, "contacts", rb.ID)
	if err != nil || got.Fields["first_name"] != "Augusta" {
		t.Errorf("R_B = %v, %v; want first name Augusta", got.Fields, err)
	}
	if n := b.counts(t)[store.StatusFailed]; n != 0 {
		t.Errorf("%d dead letters", n)
	}
}

// TestMergeReadWithoutHookKeepsWaiting: a worker without OnLinkedMergedAway
// cannot queue the merge it reads; it keeps R_A linked and waiting rather
// than writing it afresh onto the survivor.
func TestMergeReadWithoutHookKeepsWaiting(t *testing.T) {
	ctx := context.Background()
	b := setup(t, options{dialect: store.SQLite})
	ra, aID := syncedContact(t, b, "ada@example.com", "Ada")
	_, bID := syncedContact(t, b, "lovelace@example.com", "Augusta")
	editLocally(t, b, ra.ID)
	if err := b.sim.UserMerge("contacts", bID, aID); err != nil {
		t.Fatal(err)
	}
	w := b.worker(t, nil)
	cyclesPastTheWaits(t, b, w)
	if ext, ok, _ := b.links.Lookup(ctx, "hubspot", "contacts", ra.ID); !ok || ext != aID {
		t.Errorf("R_A links to %q (%v); want it kept on %s", ext, ok, aID)
	}
	if o, _ := b.sim.Object("contacts", bID); o.Properties["firstname"] != "Augusta" {
		t.Errorf("HubSpot's survivor %s has firstname %q; want Augusta", bID, o.Properties["firstname"])
	}
	if c := b.counts(t); c[store.StatusPending] != 1 {
		t.Errorf("outbound events by status %v; want R_A's edit pending", c)
	}
	reads := func() int64 { return w.Metrics().Snapshot().Calls[outbound.CallLabel{Op: "read_gone", Outcome: "ok"}] }
	if n := reads(); n != 1 {
		t.Errorf("%d reads of the object during the first waits; want 1", n)
	}
	b.clock.Advance(10 * time.Duration(outbound.NotFoundWaits) * outbound.NotFoundWaitDefault)
	if _, err := w.RunOnce(ctx); err != nil {
		t.Logf("cycle: %v", err)
	}
	if n := reads(); n != 2 {
		t.Errorf("%d reads of the object after a long wait; want it read again (2)", n)
	}
}

// cyclesPastTheWaits runs w's cycles over three times the 404 waits
// (NotFoundWaits × NotFoundWaitDefault), moving b's clock.
func cyclesPastTheWaits(t *testing.T, b *bundle, w *outbound.Worker) {
	t.Helper()
	for range 3 * outbound.NotFoundWaits {
		if _, err := w.RunOnce(context.Background()); err != nil {
			t.Logf("cycle: %v", err)
		}
		b.clock.Advance(outbound.NotFoundWaitDefault)
	}
}
