package inbound_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hubsync/hubsync/internal/testcheck"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/sqlitestore"
)

// tickingClock reads the wall clock but never returns the same millisecond
// twice, so that every simulated edit gets its own occurredAt (HubSpot's
// clock has millisecond resolution; two edits in one millisecond are a
// tie the per-field guard resolves by arrival).
type tickingClock struct {
	mu   sync.Mutex
	last time.Time
}

func (c *tickingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now().Truncate(time.Millisecond)
	if !now.After(c.last) {
		now = c.last.Add(time.Millisecond)
	}
	c.last = now
	return now
}

// TestEndToEnd: user edits in the HubSpot simulator → signed webhooks (with
// failed and duplicated deliveries) → Receiver → Worker → records, until
// the local records equal the simulator's objects, with nothing sent back.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	db := dbtest.Migrated(t, store.SQLite)
	st, err := sqlitestore.New(db.DB, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := records.New(st, nil, records.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const appID = 4242

	var worker *inbound.Worker
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	rc, err := inbound.NewReceiver(inbound.ReceiverConfig{
		Store: st.Inbound(), ClientSecret: "e2e-secret", PublicURL: srv.URL, AppID: strconv.Itoa(appID),
		Hooks: inbound.ReceiverHooks{OnAccept: func(_, inserted int, _ time.Duration) {
			if inserted > 0 {
				worker.Notify()
			}
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("POST "+inbound.WebhookPath, rc)

	clock := &tickingClock{}
	sim := hubspotsim.NewTest(t, hubspotsim.Config{
		AppID: appID, ClientSecret: "e2e-secret", WebhookURL: srv.URL + inbound.WebhookPath,
		Now: clock.Now, WebhookRetryBase: 5 * time.Millisecond, Seed: 7,
		WebhookBatchSize: 7, // many small concurrent batches: arrival order differs from occurrence order
		Faults:           hubspotsim.Faults{WebhookFailure: 0.2, WebhookDuplicate: 0.3},
	})
	client, err := hubspot.NewClient(hubspot.Config{BaseURL: sim.URL(), AccessToken: hubspotsim.AccessTokenDefault})
	if err != nil {
		t.Fatal(err)
	}
	worker, err = inbound.NewWorker(inbound.WorkerConfig{
		Store: st.Inbound(), Applier: recs, HubSpot: client, AppID: strconv.Itoa(appID),
		PollInterval: 20 * time.Millisecond, Owner: "e2e",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := worker.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()

	// User edits.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var contacts []string
	for i := range 12 {
		id, err := sim.UserCreate("contacts", map[string]string{
			"email": fmt.Sprintf("user%d@example.com", i), "firstname": fmt.Sprintf("First%d", i),
			"lastname": "Initial", "phone": "555-000" + strconv.Itoa(i),
		})
		must(err)
		contacts = append(contacts, id)
	}
	company, err := sim.UserCreate("companies", map[string]string{"name": "Acme", "domain": "acme.example", "numberofemployees": "10"})
	must(err)
	for round := range 3 {
		for i, id := range contacts {
			must(sim.UserUpdate("contacts", id, map[string]string{"lastname": fmt.Sprintf("Round%d-%d", round, i)}))
		}
	}
	must(sim.UserUpdate("contacts", contacts[0], map[string]string{"phone": ""})) // a cleared property
	must(sim.UserUpdate("companies", company, map[string]string{"numberofemployees": "250", "city": "Berlin"}))
	must(sim.UserDelete("contacts", contacts[1]))
	must(sim.WaitWebhooksIdle(ctx))
	waitQueueDrained(ctx, t, st)

	// Merge and create-then-delete only once the earlier events are applied:
	// the events of two records are not ordered against each other, and a late
	// older update of a merged-away or never-seen id would recreate it (see
	// TestEndToEndLateUpdateAfterDelete).
	must(sim.UserMerge("contacts", contacts[2], contacts[3]))
	created, err := sim.UserCreate("contacts", map[string]string{"email": "shortlived@example.com"})
	must(err)
	must(sim.WaitWebhooksIdle(ctx))
	waitQueueDrained(ctx, t, st)
	must(sim.UserDelete("contacts", created)) // created then deleted
	must(sim.WaitWebhooksIdle(ctx))
	waitQueueDrained(ctx, t, st)

	if c := sim.Counters(); c.WebhooksDropped != 0 {
		t.Fatalf("simulator dropped %d webhook events", c.WebhooksDropped)
	}
	lk := links.New(st)
	m := mapping.Default()
	for _, typ := range []string{"contacts", "companies"} {
		obj, _ := m.Lookup(typ)
		want := sim.Objects(typ)
		live := 0
		for _, o := range want {
			recID, ok, err := lk.LookupRecord(ctx, "hubspot", typ, o.ID)
			must(err)
			if !ok {
				t.Errorf("%s %s: no local record linked", typ, o.ID)
				continue
			}
			rec, err := recs.Get(ctx, typ, recID)
			if err != nil {
				t.Errorf("%s %s: %v", typ, o.ID, err)
				continue
			}
			live++
			wantFields, err := obj.FromHubSpot(o.Properties)
			must(err)
			for _, f := range obj.Fields {
				got, want := rec.Fields[f.Local], wantFields[f.Local]
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s %s: field %s = %v, want %v", typ, o.ID, f.Local, got, want)
				}
			}
		}
		all, err := recs.List(ctx, typ, records.ListOptions{Limit: 100})
		must(err)
		if len(all) != live {
			t.Errorf("%s: %d local records, %d live in HubSpot", typ, len(all), live)
		}
	}
	// The deleted and merged-away contacts have no live local record.
	for _, id := range []string{contacts[1], contacts[3], created} {
		recID, ok, err := lk.LookupRecord(ctx, "hubspot", "contacts", id)
		must(err)
		if ok {
			if _, err := recs.Get(ctx, "contacts", recID); !errors.Is(err, records.ErrNotFound) {
				t.Errorf("contact %s: local record still live (%v)", id, err)
			}
		}
	}
	// Anti-loop: applying HubSpot's changes enqueued nothing back to HubSpot.
	var outbound int
	must(db.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM _System_IntegrationOutbound").Scan(&outbound))
	if outbound != 0 {
		t.Errorf("%d outbound events enqueued by inbound sync", outbound)
	}
	var failed int
	must(db.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM _System_IntegrationInbound WHERE Status = 'failed'").Scan(&failed))
	if failed != 0 {
		t.Errorf("%d inbound events dead-lettered", failed)
	}
}

// waitQueueDrained polls until no inbound event is pending or processing.
func waitQueueDrained(ctx context.Context, t *testing.T, st store.Store) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		stats, err := st.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		busy := int64(0)
		for _, r := range stats.Rows {
			if r.Direction == store.DirectionInbound && (r.Status == store.StatusPending || r.Status == store.StatusProcessing) {
				busy += r.Count
			}
		}
		if busy == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("inbound queue not drained: %d events left", busy)
		case <-tick.C:
		}
	}
}

// TestEndToEndLateUpdateAfterDelete: the events of one object arrive out of
// order across deliveries: its deletion (or its merge into another) is
// applied before an older property change. The older change must be stale,
// not bring the object back.
func TestEndToEndLateUpdateAfterDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Migrated(t, store.SQLite)
	st, err := sqlitestore.New(db.DB, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := records.New(st, nil, records.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// The first change of each object finds no linked record, so the worker
	// reads the object (as it stood before its deletion or merge).
	objects := objectsReader{"1": {"firstname": "One"}, "2": {"firstname": "Two"}, "3": {"firstname": "Three"}}
	w, err := inbound.NewWorker(inbound.WorkerConfig{Store: st.Inbound(), Applier: recs, HubSpot: objects, Owner: "late"})
	if err != nil {
		t.Fatal(err)
	}
	const t0 = int64(1_700_000_000_000) // in the past: the worker refuses events from the future
	deliver := func(evs ...hubspot.WebhookEvent) {
		t.Helper()
		var rows []store.InboundEvent
		for _, ev := range evs {
			body, _ := json.Marshal([]hubspot.WebhookEvent{ev})
			p, err := inbound.ParseEvents(body)
			if err != nil {
				t.Fatal(err)
			}
			row, err := testcheck.Index(t, "the parsed events", p, 0).Resolve(nil, "")
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, row)
		}
		if _, err := st.Inbound().EnqueueBatch(ctx, rows); err != nil {
			t.Fatal(err)
		}
		for {
			n, err := w.RunOnce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				return
			}
		}
	}
	upd := func(id, at int64, v string) hubspot.WebhookEvent {
		return hubspot.WebhookEvent{EventID: at, PortalID: 1, OccurredAt: at, SubscriptionType: "contact.propertyChange", ObjectID: id, PropertyName: "firstname", PropertyValue: v}
	}
	// Object 1 is known, then deleted; an older change arrives afterwards.
	deliver(upd(1, t0, "One"))
	deliver(hubspot.WebhookEvent{EventID: 2, PortalID: 1, OccurredAt: t0 + 100, SubscriptionType: "contact.deletion", ObjectID: 1})
	deliver(upd(1, t0+50, "Late"))
	// Object 3 is merged into 2; an older change of 3 arrives afterwards.
	deliver(upd(2, t0, "Two"), upd(3, t0, "Three"))
	deliver(hubspot.WebhookEvent{EventID: 4, PortalID: 1, OccurredAt: t0 + 100, SubscriptionType: "contact.merge", ObjectID: 2, PrimaryObjectID: 2, MergedObjectIDs: []int64{3}})
	deliver(upd(3, t0+50, "Late"))
	// Object 5 was never seen: its deletion arrives before its older change.
	deliver(hubspot.WebhookEvent{EventID: 6, PortalID: 1, OccurredAt: t0 + 100, SubscriptionType: "contact.deletion", ObjectID: 5})
	deliver(upd(5, t0+50, "Unseen"))

	all, err := recs.List(ctx, "contacts", records.ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range all {
		names = append(names, fmt.Sprint(r.Fields["first_name"]))
	}
	if len(all) != 1 || names[0] != "Two" {
		t.Fatalf("live records %v, want only [Two]: a change older than the merge or the deletion of an id resurrected it", names)
	}
}

// objectsReader is an ObjectReader of fixed objects: their properties by id.
type objectsReader map[string]map[string]string

func (r objectsReader) BatchRead(_ context.Context, _ hubspot.ObjectType, ids []string, _ []string, _ string) (*hubspot.BatchResult, error) {
	res := &hubspot.BatchResult{Status: "COMPLETE"}
	for _, id := range ids {
		if props, ok := r[id]; ok {
			res.Results = append(res.Results, hubspot.Object{ID: id, Properties: props})
		}
	}
	return res, nil
}

// TestEndToEndMergeBringsMovedProperties: HubSpot sends no propertyChange for
// the values a merge copies into the survivor; the SyncWorker reads the
// survivor after a merge that moved properties and applies its values, so the
// local survivor ends with HubSpot's.
func TestEndToEndMergeBringsMovedProperties(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := dbtest.Migrated(t, store.SQLite)
	st, err := sqlitestore.New(db.DB, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := records.New(st, nil, records.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var worker *inbound.Worker
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	rc, err := inbound.NewReceiver(inbound.ReceiverConfig{
		Store: st.Inbound(), ClientSecret: "e2e-secret", PublicURL: srv.URL,
		Hooks: inbound.ReceiverHooks{OnAccept: func(_, inserted int, _ time.Duration) {
			if inserted > 0 {
				worker.Notify()
			}
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("POST "+inbound.WebhookPath, rc)
	clock := &tickingClock{}
	sim := hubspotsim.NewTest(t, hubspotsim.Config{
		ClientSecret: "e2e-secret", WebhookURL: srv.URL + inbound.WebhookPath, Now: clock.Now, Seed: 3,
	})
	client, err := hubspot.NewClient(hubspot.Config{BaseURL: sim.URL(), AccessToken: hubspotsim.AccessTokenDefault})
	if err != nil {
		t.Fatal(err)
	}
	worker, err = inbound.NewWorker(inbound.WorkerConfig{
		Store: st.Inbound(), Applier: recs, HubSpot: client, PollInterval: 20 * time.Millisecond, Owner: "merge",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := worker.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	settle := func() {
		t.Helper()
		must(sim.WaitWebhooksIdle(ctx))
		waitQueueDrained(ctx, t, st)
	}
	survivor, err := sim.UserCreate("contacts", map[string]string{"email": "keep@example.com", "firstname": "Keep"})
	must(err)
	merged, err := sim.UserCreate("contacts", map[string]string{"email": "gone@example.com", "firstname": "Gone", "phone": "555-1", "company": "Acme"})
	must(err)
	settle()
	must(sim.UserUpdate("contacts", merged, map[string]string{"phone": "555-2"})) // the merged one's newer value
	settle()
	must(sim.UserMerge("contacts", survivor, merged))
	settle()

	var want map[string]string
	for _, o := range sim.Objects("contacts") {
		if o.ID == survivor {
			want = o.Properties
		}
	}
	if want["phone"] != "555-2" || want["company"] != "Acme" {
		t.Fatalf("the simulator's survivor %v did not take the moved values; the test needs them", want)
	}
	recID, ok, err := links.New(st).LookupRecord(ctx, "hubspot", "contacts", survivor)
	must(err)
	if !ok {
		t.Fatal("survivor not linked")
	}
	rec, err := recs.Get(ctx, "contacts", recID)
	must(err)
	obj, _ := mapping.Default().Lookup("contacts")
	wantFields, err := obj.FromHubSpot(want)
	must(err)
	for _, f := range obj.Fields {
		if got, w := fmt.Sprint(rec.Fields[f.Local]), fmt.Sprint(wantFields[f.Local]); got != w {
			t.Errorf("local survivor %s = %s, HubSpot's survivor has %s", f.Local, got, w)
		}
	}
	all, err := recs.List(ctx, "contacts", records.ListOptions{})
	must(err)
	if len(all) != 1 {
		t.Errorf("%d local contacts after the merge, want the survivor only", len(all))
	}
}
