package outbound_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// gatedLinks runs before once, when the outbound worker is about to record
// what HubSpot accepted: after HubSpot created the object, before its link is
// stored.
type gatedLinks struct {
	*links.Links
	once   sync.Once
	before func()
}

func (g *gatedLinks) PushedMany(ctx context.Context, destination, objectType string, states []links.Pushed) error {
	g.once.Do(g.before)
	return g.Links.PushedMany(ctx, destination, objectType, states)
}

// TestHubSpotEditBeforeTheLink is the flake of the two-way e2e test, made
// deterministic: a HubSpot user edits the object hubsync just created, and the
// SyncWorker applies that edit's webhook before the outbound worker has
// recorded the object's link. The edit must reach the local record it belongs
// to (found by the mapping's id property), no second local record may appear,
// and the outbound worker's link of the same pair must succeed, not conflict.
func TestHubSpotEditBeforeTheLink(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		b := setup(t, options{dialect: d})

		in := b.inboundSide(t)

		rec, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "ada@example.com", "first_name": "Ada"})
		if err != nil {
			t.Fatal(err)
		}
		gl := &gatedLinks{Links: b.links}
		gl.before = func() {
			objs := b.sim.Objects("contacts")
			if len(objs) != 1 {
				t.Errorf("HubSpot holds %d contacts before the link; want the one just created", len(objs))
				return
			}
			b.clock.Advance(time.Second)
			if err := b.sim.UserUpdate("contacts", objs[0].ID, map[string]string{"firstname": "Augusta"}); err != nil {
				t.Error(err)
				return
			}
			deliverInbound(ctx, t, b, in)
		}
		w := b.worker(t, func(c *outbound.Config) { c.Links = gl })
		b.drain(t, w)
		drainInbound(t, b, in)

		if c := b.counts(t); c[store.StatusFailed] != 0 || c[store.StatusProcessed] == 0 {
			t.Errorf("outbound events by status %v; want all completed, no dead letter", c)
		}
		objs := b.sim.Objects("contacts")
		if len(objs) != 1 {
			t.Fatalf("HubSpot holds %d contacts; want 1", len(objs))
		}
		if ext, ok, err := b.links.Lookup(ctx, "hubspot", "contacts", rec.ID); err != nil || !ok || ext != objs[0].ID {
			t.Errorf("link of %s = %q, %v, %v; want HubSpot contact %s", rec.ID, ext, ok, err, objs[0].ID)
		}
		all, err := b.recs.List(ctx, "contacts", records.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 1 {
			t.Errorf("%d local contacts %v; want only %s: the edit made a record of its own", len(all), all, rec.ID)
		}
		got, err := b.recs.Get(ctx, "contacts", rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Fields["first_name"] != "Augusta" || got.Fields["email"] != "ada@example.com" {
			t.Errorf("local record %v; want the HubSpot edit (first_name Augusta) applied to it", got.Fields)
		}
	})
}

// inboundSide points the simulator's webhooks at a receiver on b's store and
// returns a SyncWorker applying them to b's records (drainInbound runs it).
func (b *bundle) inboundSide(t *testing.T) *inbound.Worker {
	t.Helper()
	rc, err := inbound.NewReceiver(inbound.ReceiverConfig{
		Store: b.st.Inbound(), ClientSecret: hubspotsim.ClientSecretDefault,
		AppID: strconv.FormatInt(hubspotsim.AppIDDefault, 10), Now: b.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	if err := b.sim.SetWebhookURL(srv.URL + inbound.WebhookPath); err != nil {
		t.Fatal(err)
	}
	in, err := inbound.NewWorker(inbound.WorkerConfig{
		Store: b.st.Inbound(), Applier: b.recs, HubSpot: b.client, Mapping: b.mapping,
		AppID: strconv.FormatInt(hubspotsim.AppIDDefault, 10), Now: b.clock.Now, Owner: "sync",
		LeaseDuration: time.Minute, Logger: testLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// deliverInbound waits until the simulator has sent its webhooks, then
// drains the inbound queue (drainInbound); false when the wait failed (the
// test has failed).
func deliverInbound(ctx context.Context, t *testing.T, b *bundle, w *inbound.Worker) bool {
	t.Helper()
	if err := b.sim.WaitWebhooksIdle(ctx); err != nil {
		t.Error(err)
		return false
	}
	drainInbound(t, b, w)
	return true
}

// drainInbound runs the SyncWorker until no inbound event is pending or
// processing, moving the injected clock over backoffs.
func drainInbound(t *testing.T, b *bundle, w *inbound.Worker) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := w.RunOnce(context.Background())
		if err != nil {
			t.Logf("inbound cycle: %v", err)
		}
		if n > 0 {
			continue
		}
		s, err := b.st.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		busy := int64(0)
		for _, r := range s.Rows {
			if r.Direction == store.DirectionInbound && (r.Status == store.StatusPending || r.Status == store.StatusProcessing) {
				busy += r.Count
			}
		}
		if busy == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("inbound queue did not drain: %d events left", busy)
		}
		b.clock.Advance(2 * time.Second)
	}
}

// failingLinks fails every pushed-state write that includes record bad.
type failingLinks struct {
	*links.Links
	bad string
}

func (f *failingLinks) PushedMany(ctx context.Context, destination, objectType string, states []links.Pushed) error {
	for _, st := range states {
		if st.RecordID == f.bad {
			return errors.New("disk full")
		}
	}
	return f.Links.PushedMany(ctx, destination, objectType, states)
}

// TestLinkFailureFailsOnlyItsRecord: when recording what HubSpot accepted
// fails for one record (not a conflict), that record is retried, and the
// cycle neither fails nor holds the other records back.
func TestLinkFailureFailsOnlyItsRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, options{})
	good, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "good@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "bad@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	fl := &failingLinks{Links: b.links, bad: bad.ID}
	w := b.worker(t, func(c *outbound.Config) { c.Links = fl })
	sum, err := w.RunOnce(ctx)
	if err != nil {
		t.Fatalf("cycle = %v; one record's link failure must not fail the cycle", err)
	}
	if sum.Completed != 1 || sum.Retried != 1 {
		t.Fatalf("summary %+v; want the good record completed and the bad one retried", sum)
	}
	if _, ok, err := b.links.Lookup(ctx, "hubspot", "contacts", good.ID); !ok || err != nil {
		t.Fatalf("good record's link: %v, %v", ok, err)
	}
	fl.bad = ""
	b.drain(t, w)
	if _, ok, err := b.links.Lookup(ctx, "hubspot", "contacts", bad.ID); !ok || err != nil {
		t.Fatalf("bad record's link after the retry: %v, %v", ok, err)
	}
	if n := len(b.sim.Objects("contacts")); n != 2 {
		t.Fatalf("HubSpot holds %d contacts; want 2 (the retry upserts by email)", n)
	}
}

// TestDeletedWhileItsCreateIsInFlight: a record is deleted locally while
// the outbound worker's create of it is in flight (its deletion finds no
// link to tombstone), then a HubSpot user edits the new object. The edit
// must not bring the record back; the queued deletion archives the object.
// Before, the link stored after the deletion made the edit apply to a
// "linked but deleted" record, which came back to life under its id.
func TestDeletedWhileItsCreateIsInFlight(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		b := setup(t, options{dialect: d})
		in := b.inboundSide(t)
		rec, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "ghost@example.com", "first_name": "Ann"})
		if err != nil {
			t.Fatal(err)
		}
		gl := &gatedLinks{Links: b.links}
		gl.before = func() { // HubSpot answered the create; its link is not stored yet
			if err := b.recs.Delete(ctx, "contacts", rec.ID, 1); err != nil {
				t.Error(err)
			}
		}
		w := b.worker(t, func(c *outbound.Config) { c.Links = gl })
		if _, err := w.RunOnce(ctx); err != nil {
			t.Logf("cycle: %v", err)
		}
		objs := b.sim.Objects("contacts")
		if len(objs) != 1 {
			t.Fatalf("HubSpot holds %d contacts after the create; want 1", len(objs))
		}
		b.clock.Advance(time.Second)
		if err := b.sim.UserUpdate("contacts", objs[0].ID, map[string]string{"firstname": "Bob"}); err != nil {
			t.Fatal(err)
		}
		if !deliverInbound(ctx, t, b, in) {
			t.FailNow()
		}
		if got, err := b.recs.Get(ctx, "contacts", rec.ID); err == nil {
			t.Errorf("the deleted record came back after a HubSpot edit: %v", got.Fields)
		}
		b.drain(t, w)
		drainInbound(t, b, in)
		if live := liveContacts(b); len(live) != 0 {
			t.Errorf("HubSpot has live contacts %v; want the deleted record's archived", live)
		}
		all, err := b.recs.List(ctx, "contacts", records.ListOptions{})
		if err != nil || len(all) != 0 {
			t.Errorf("local contacts %v, %v; want none", all, err)
		}
		if n := b.counts(t)[store.StatusFailed]; n != 0 {
			t.Errorf("%d dead letters", n)
		}
	})
}

// TestDeletedWhileItsCreateIsInFlightEditedBeforeTheLink: as above, but the
// HubSpot edit is applied before the link is stored: no local record
// matches the new object (its record is deleted), so the SyncWorker makes
// one of it. That record keeps the object: the deleted record's create
// completes (no dead letter for a link conflict) and its deletion leaves
// the object to it. Both sides end the same.
func TestDeletedWhileItsCreateIsInFlightEditedBeforeTheLink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, options{dialect: store.SQLite})
	in := b.inboundSide(t)
	rec, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "ghost@example.com", "first_name": "Ann"})
	if err != nil {
		t.Fatal(err)
	}
	gl := &gatedLinks{Links: b.links}
	gl.before = func() {
		if err := b.recs.Delete(ctx, "contacts", rec.ID, 1); err != nil {
			t.Error(err)
		}
		objs := b.sim.Objects("contacts")
		if len(objs) != 1 {
			t.Errorf("HubSpot holds %d contacts; want the one just created", len(objs))
			return
		}
		b.clock.Advance(time.Second)
		if err := b.sim.UserUpdate("contacts", objs[0].ID, map[string]string{"firstname": "Bob"}); err != nil {
			t.Error(err)
			return
		}
		deliverInbound(ctx, t, b, in)
	}
	w := b.worker(t, func(c *outbound.Config) { c.Links = gl })
	b.drain(t, w)
	drainInbound(t, b, in)

	if n := b.counts(t)[store.StatusFailed]; n != 0 {
		t.Errorf("%d dead letters; want none", n)
	}
	all, err := b.recs.List(ctx, "contacts", records.ListOptions{})
	if err != nil || len(all) != 1 || all[0].ID == rec.ID || all[0].Fields["first_name"] != "Bob" {
		t.Fatalf("local contacts %v, %v; want one new record with first name Bob", all, err)
	}
	live := liveContacts(b)
	if len(live) != 1 {
		t.Fatalf("HubSpot has live contacts %v; want the one the new record keeps", live)
	}
	if ext, ok, _ := b.links.Lookup(ctx, "hubspot", "contacts", all[0].ID); !ok || ext+" ghost@example.com" != live[0] {
		t.Errorf("the new record links to %q (%v); want %s", ext, ok, live[0])
	}
}
