package subscriptions_test

import (
	"context"
	"testing"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/subscriptions"
)

type pushBundle struct {
	st  store.Store
	s   *subscriptions.Store
	sim *hubspotsim.Server
	new func(owner string) *outbound.Worker
}

func setupPush(t *testing.T, d store.Dialect, simCfg hubspotsim.Config) pushBundle {
	t.Helper()
	st, s := newStore(t, d)
	sim := hubspotsim.NewTest(t, simCfg)
	client, err := hubspot.NewClient(hubspot.Config{BaseURL: sim.URL(), AccessToken: hubspotsim.AccessTokenDefault, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	bud, err := budget.NewMemory(budget.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m := testMapping(t)
	newWorker := func(owner string) *outbound.Worker {
		w, err := outbound.NewWorker(outbound.Config{Store: st.Outbound(), HubSpot: client, Links: links.New(st), Budget: bud,
			Mapping: m, Owner: owner, Handlers: map[string]outbound.Handler{subscriptions.ObjectType: subscriptions.NewPusher(s, client, m, nil)}})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	return pushBundle{st: st, s: s, sim: sim, new: newWorker}
}

func (b pushBundle) writes() int64 {
	c := b.sim.Counters()
	return c.RequestsByPath["POST /communication-preferences/v3/subscribe"] + c.RequestsByPath["POST /communication-preferences/v3/unsubscribe"]
}

func (b pushBundle) status(t *testing.T, id string) subscriptions.Stored {
	t.Helper()
	got, err := b.s.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestOutOfOrderAcrossWorkers: the newer request is pushed first by one
// worker; the older event, processed afterwards by another worker, completes
// as superseded without a HubSpot call, and HubSpot keeps the newest state.
func TestOutOfOrderAcrossWorkers(t *testing.T) {
	ctx := context.Background()
	b := setupPush(t, store.SQLite, hubspotsim.Config{})
	older, _ := b.s.Submit(ctx, req("ada@example.com", "subscribed"), "k1", 1)
	newer, err := b.s.Submit(ctx, req("ada@example.com", "unsubscribed"), "k2", 1)
	if err != nil {
		t.Fatal(err)
	}
	// The older event is dead-lettered first (e.g. HubSpot was down for all
	// its attempts), so the queue lets the newer one through.
	evs, err := b.st.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot", Owner: "a", MaxPerRecord: 1})
	if err != nil || len(evs) != 1 {
		t.Fatalf("claim = %d events, %v", len(evs), err)
	}
	if err := b.st.Outbound().Fail(ctx, evs[0].Lease(), "simulated outage"); err != nil {
		t.Fatal(err)
	}
	// Worker B pushes the newer request.
	sum, err := b.new("b").RunOnce(ctx)
	if err != nil || sum.Completed != 1 || sum.Calls != 1 {
		t.Fatalf("worker b = %+v, %v; want one completed with one call", sum, err)
	}
	// The operator re-queues the dead letter; worker A now processes the older event.
	if _, err := b.st.Outbound().Requeue(ctx, evs[0].ID); err != nil {
		t.Fatal(err)
	}
	if got := b.sim.SubscriptionStatus("ada@example.com", 1); got != "UNSUBSCRIBED" {
		t.Fatalf("HubSpot status %s after the newer request, want UNSUBSCRIBED", got)
	}
	callsBefore := b.writes()
	sum, err = b.new("a").RunOnce(ctx)
	if err != nil || sum.Superseded != 1 || sum.Calls != 0 {
		t.Fatalf("worker a = %+v, %v; want one superseded without a call", sum, err)
	}
	if b.writes() != callsBefore {
		t.Fatalf("the superseded event called HubSpot")
	}
	if got := b.sim.SubscriptionStatus("ada@example.com", 1); got != "UNSUBSCRIBED" {
		t.Fatalf("HubSpot status %s, want the newest UNSUBSCRIBED", got)
	}
	if o, n := b.status(t, older.ID), b.status(t, newer.ID); o.SyncStatus != "superseded" || n.SyncStatus != "synced" {
		t.Fatalf("statuses %s, %s; want superseded, synced", o.SyncStatus, n.SyncStatus)
	}
}

// TestOneClaimSendsNewest: a claim holding several requests of a contact
// makes one call, with the newest state.
func TestOneClaimSendsNewest(t *testing.T) {
	ctx := context.Background()
	b := setupPush(t, store.SQLite, hubspotsim.Config{})
	for i, st := range []string{"subscribed", "unsubscribed", "subscribed"} {
		if _, err := b.s.Submit(ctx, req("bo@example.com", st), string(rune('a'+i)), 1); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := b.new("w").RunOnce(ctx)
	if err != nil || sum.Completed != 3 || sum.Calls != 1 || sum.Superseded != 2 {
		t.Fatalf("cycle = %+v, %v; want 3 completed, 1 call, 2 superseded", sum, err)
	}
	if got := b.sim.SubscriptionStatus("bo@example.com", 1); got != "SUBSCRIBED" {
		t.Fatalf("HubSpot status %s, want SUBSCRIBED", got)
	}
}

// TestCrashBetweenInsertAndPush: the request and its event commit together,
// so a replica that dies before pushing leaves an event any worker started
// later pushes.
func TestCrashBetweenInsertAndPush(t *testing.T) {
	ctx := context.Background()
	b := setupPush(t, store.SQLite, hubspotsim.Config{})
	r, _ := b.s.Submit(ctx, req("cy@example.com", "subscribed"), "k", 1)
	// The first replica claims the event and dies holding the lease.
	if _, err := b.st.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot", LeaseDuration: time.Millisecond, Owner: "dead"}); err != nil {
		t.Fatal(err)
	}
	w := b.new("restarted")
	deadline := time.Now().Add(10 * time.Second)
	for b.status(t, r.ID).SyncStatus == "pending" {
		if time.Now().After(deadline) {
			t.Fatal("the event was never pushed after the restart")
		}
		if _, err := w.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.sim.SubscriptionStatus("cy@example.com", 1); got != "SUBSCRIBED" || b.status(t, r.ID).SyncStatus != "synced" {
		t.Fatalf("HubSpot %s, request %s; want SUBSCRIBED, synced", got, b.status(t, r.ID).SyncStatus)
	}
}

// TestHubSpotErrorCases: each documented failure settles, never loops.
func TestHubSpotErrorCases(t *testing.T) {
	ctx := context.Background()
	t.Run("already in that state completes", func(t *testing.T) {
		b := setupPush(t, store.SQLite, hubspotsim.Config{})
		if _, err := b.sim.UserCreate("contacts", map[string]string{"email": "al@example.com"}); err != nil {
			t.Fatal(err)
		}
		r, _ := b.s.Submit(ctx, req("al@example.com", "unsubscribed"), "k1", 1)
		b.sim.OptOutOfAllEmail("al@example.com") // already unsubscribed from everything
		sum, err := b.new("w").RunOnce(ctx)
		if err != nil || sum.Completed != 1 || b.status(t, r.ID).SyncStatus != "synced" {
			t.Fatalf("cycle = %+v, %v, status %s; want completed, synced", sum, err, b.status(t, r.ID).SyncStatus)
		}
	})
	t.Run("opted out of all email fails the request", func(t *testing.T) {
		b := setupPush(t, store.SQLite, hubspotsim.Config{})
		b.sim.OptOutOfAllEmail("oo@example.com")
		r, _ := b.s.Submit(ctx, req("oo@example.com", "subscribed"), "k1", 1)
		sum, err := b.new("w").RunOnce(ctx)
		got := b.status(t, r.ID)
		if err != nil || sum.Completed != 1 || got.SyncStatus != "failed" || got.SyncDetail == "" {
			t.Fatalf("cycle = %+v, %v, request %+v; want completed, failed with a reason", sum, err, got)
		}
	})
	t.Run("a newer synced request supersedes an older failed one", func(t *testing.T) {
		dbtest.Each(t, func(t *testing.T, d store.Dialect) {
			b := setupPush(t, d, hubspotsim.Config{})
			b.sim.OptOutOfAllEmail("of@example.com")
			older, _ := b.s.Submit(ctx, req("of@example.com", "subscribed"), "k1", 1)
			if sum, err := b.new("w").RunOnce(ctx); err != nil || sum.Completed != 1 || b.status(t, older.ID).SyncStatus != "failed" {
				t.Fatalf("cycle = %+v, %v, request %+v; want completed, failed", sum, err, b.status(t, older.ID))
			}
			newer, _ := b.s.Submit(ctx, req("of@example.com", "unsubscribed"), "k2", 2)
			if sum, err := b.new("w").RunOnce(ctx); err != nil || sum.Completed != 1 || b.status(t, newer.ID).SyncStatus != "synced" {
				t.Fatalf("cycle = %+v, %v, request %+v; want completed, synced", sum, err, b.status(t, newer.ID))
			}
			if got := b.status(t, older.ID); got.SyncStatus != "superseded" {
				t.Fatalf("older failed request %+v after a newer one synced; want superseded", got)
			}
		})
	})
	t.Run("invalid subscription id dead-letters", func(t *testing.T) {
		dbtest.Each(t, func(t *testing.T, d store.Dialect) {
			b := setupPush(t, d, hubspotsim.Config{})
			r := req("iv@example.com", "subscribed")
			r.ProductID = "offers" // mapped to subscription 2; make it invalid below
			bad := testMapping(t)
			bad, _ = bad.WithSubscriptions(2, mappingSub("acme", "offers", "999"))
			st, s := b.st, b.s
			client, _ := hubspot.NewClient(hubspot.Config{BaseURL: b.sim.URL(), AccessToken: hubspotsim.AccessTokenDefault})
			bud, _ := budget.NewMemory(budget.Config{})
			w, err := outbound.NewWorker(outbound.Config{Store: st.Outbound(), HubSpot: client, Links: links.New(st), Budget: bud,
				Handlers: map[string]outbound.Handler{subscriptions.ObjectType: subscriptions.NewPusher(s, client, bad, nil)}})
			if err != nil {
				t.Fatal(err)
			}
			sr, _ := s.Submit(ctx, r, "k1", 2)
			sum, err := w.RunOnce(ctx)
			dl, _ := st.Outbound().DeadLetters(ctx, store.DeadLetterFilter{})
			if err != nil || sum.Failed != 1 || len(dl) != 1 || dl[0].ErrorMessage == "" || b.status(t, sr.ID).SyncStatus != "failed" {
				t.Fatalf("cycle = %+v, %v, dead letters %+v; want one with a reason", sum, err, dl)
			}
			// The fix the dead letter asks for: map the right subscription (the
			// test mapping's acme/offers is 2) and re-queue. HubSpot then holds
			// the request's state, and the request says so.
			if _, err := st.Outbound().Requeue(ctx, dl[0].ID); err != nil {
				t.Fatal(err)
			}
			if sum, err := b.new("fixed").RunOnce(ctx); err != nil || sum.Completed != 1 || sum.Calls != 1 {
				t.Fatalf("cycle after the fix = %+v, %v; want one completed with one call", sum, err)
			}
			if hs := b.sim.SubscriptionStatus("iv@example.com", 2); hs != "SUBSCRIBED" {
				t.Fatalf("HubSpot subscription 2 is %q after the re-queue, want SUBSCRIBED", hs)
			}
			if got := b.status(t, sr.ID); got.SyncStatus != "synced" {
				t.Fatalf("request %+v after its re-queued event reached HubSpot; want synced", got)
			}
		})
	})
	t.Run("contact unknown retries", func(t *testing.T) {
		b := setupPush(t, store.SQLite, hubspotsim.Config{CommPrefsRequireContact: true})
		r, _ := b.s.Submit(ctx, req("nobody@example.com", "subscribed"), "k1", 1)
		sum, err := b.new("w").RunOnce(ctx)
		if err != nil || sum.Retried != 1 || b.status(t, r.ID).SyncStatus != "pending" {
			t.Fatalf("cycle = %+v, %v; want one retried, request pending", sum, err)
		}
	})
	t.Run("our own cancellation releases without an attempt", func(t *testing.T) {
		b := setupPush(t, store.SQLite, hubspotsim.Config{})
		if err := b.sim.SetFaults(hubspotsim.Faults{Latency: 2 * time.Second}); err != nil {
			t.Fatal(err)
		}
		r, _ := b.s.Submit(ctx, req("cx@example.com", "subscribed"), "k1", 1)
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		_, _ = b.new("w").RunOnce(short)
		evs, err := b.st.Outbound().GetPending(ctx, "hubspot", 10)
		if err != nil || len(evs) != 1 || evs[0].RetryCount != 0 {
			t.Fatalf("after a cycle stopped mid-call: pending %+v, %v; want the event pending with no attempt used", evs, err)
		}
		if got := b.status(t, r.ID); got.SyncStatus != "pending" {
			t.Fatalf("request %+v; want pending", got)
		}
	})
	t.Run("transient error retries", func(t *testing.T) {
		b := setupPush(t, store.SQLite, hubspotsim.Config{})
		if err := b.sim.SetFaults(hubspotsim.Faults{Error503: 1}); err != nil {
			t.Fatal(err)
		}
		r, _ := b.s.Submit(ctx, req("tr@example.com", "subscribed"), "k1", 1)
		sum, err := b.new("w").RunOnce(ctx)
		if err != nil || sum.Retried != 1 || b.status(t, r.ID).SyncStatus != "pending" {
			t.Fatalf("cycle = %+v, %v; want one retried", sum, err)
		}
	})
}

// TestUnreadablePayloadDeadLetters: an event whose payload is not a
// subscription request is a dead letter with the reason, without a call.
func TestUnreadablePayloadDeadLetters(t *testing.T) {
	ctx := context.Background()
	b := setupPush(t, store.SQLite, hubspotsim.Config{})
	if _, err := b.st.Outbound().Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: subscriptions.ObjectType,
		RecordID: "acme/news/x@example.com", EventType: store.EventUpdate, Payload: []byte(`{"unexpected":true}`)}); err != nil {
		t.Fatal(err)
	}
	sum, err := b.new("w").RunOnce(ctx)
	if err != nil || sum.Failed != 1 || sum.Calls != 0 || b.writes() != 0 {
		t.Fatalf("cycle = %+v, %v; want one dead letter, no call", sum, err)
	}
}
