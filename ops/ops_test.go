package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/sqlitestore"
	"github.com/hubsync/hubsync/store/storetest"
	"github.com/hubsync/hubsync/subscriptions"
)

type opsBundle struct {
	st    store.Store
	clock *storetest.Clock
}

func setupOps(t testing.TB) opsBundle {
	t.Helper()
	db := dbtest.Migrated(t, store.SQLite)
	clock := storetest.NewClock(time.Time{})
	st, err := sqlitestore.New(db.DB, store.Config{Now: clock.Now, Retry: store.RetryPolicy{MaxAttempts: 1, NoJitter: true}})
	if err != nil {
		t.Fatal(err)
	}
	return opsBundle{st: st, clock: clock}
}

func outboundEvent(t *testing.T, dest, recordID string) store.OutboundEvent {
	t.Helper()
	p, err := outbox.Snapshot{ID: recordID, Fields: map[string]any{"email": recordID + "@example.com"}}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return store.OutboundEvent{Destination: dest, ObjectType: "contacts", RecordID: recordID, EventType: store.EventCreate, Payload: p}
}

func inboundEvent(source, externalID string) store.InboundEvent {
	return store.InboundEvent{
		Source: source, ExternalID: externalID, ObjectType: "contacts", EventType: store.EventUpdate,
		Payload: json.RawMessage(`{}`), IdempotencyKey: source + ":" + externalID,
	}
}

// deadOutbound enqueues n outbound events for dest and dead-letters them.
func (b opsBundle) deadOutbound(t *testing.T, dest string, n int) []string {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		if _, err := b.st.Outbound().Enqueue(ctx, outboundEvent(t, dest, fmt.Sprintf("%s-%d", dest, i))); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := b.st.Outbound().Claim(ctx, store.ClaimParams{Key: dest, Limit: n})
	if err != nil || len(evs) != n {
		t.Fatalf("claim: %d events, %v", len(evs), err)
	}
	var ids []string
	for _, e := range evs {
		if err := b.st.Outbound().Fail(ctx, e.Lease(), "boom "+e.RecordID); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	return ids
}

func TestLoadMetricsByExactKey(t *testing.T) {
	t.Parallel()
	b := setupOps(t)
	ctx := context.Background()
	b.deadOutbound(t, "hubspot", 2)
	// A destination whose name starts like another must be counted apart: the
	// seed's prefix routing (P1) is what this replaces.
	if _, err := b.st.Outbound().Enqueue(ctx, outboundEvent(t, "hubspot2", "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.st.Inbound().Enqueue(ctx, inboundEvent("hubspot", "1")); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(90 * time.Second)

	m, err := LoadMetrics(ctx, b.st)
	if err != nil {
		t.Fatal(err)
	}
	if m.DeadLetters != 2 || m.Pending != 2 {
		t.Fatalf("totals: dead %d pending %d, want 2 and 2", m.DeadLetters, m.Pending)
	}
	got := map[string]QueueMetrics{}
	for _, q := range m.Queues {
		got[string(q.Direction)+"/"+q.Key] = q
	}
	if q := got["outbound/hubspot"]; q.Counts[store.StatusFailed] != 2 || q.Counts[store.StatusPending] != 0 || q.OldestPending != nil {
		t.Errorf("outbound/hubspot = %+v", q)
	}
	if q := got["outbound/hubspot2"]; q.Counts[store.StatusPending] != 1 || q.OldestPendingAgeSeconds != 90 {
		t.Errorf("outbound/hubspot2 = %+v, want 1 pending aged 90s", q)
	}
	if q := got["inbound/hubspot"]; q.Counts[store.StatusPending] != 1 {
		t.Errorf("inbound/hubspot = %+v", q)
	}
}

func TestDeadLettersListAndRetry(t *testing.T) {
	t.Parallel()
	b := setupOps(t)
	ctx := context.Background()
	ids := b.deadOutbound(t, "hubspot", 3)
	b.deadOutbound(t, "other", 1)

	dls, err := ListDeadLetters(ctx, b.st, DeadLetterQuery{Direction: store.DirectionOutbound, Key: "hubspot", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 2 || dls[0].Key != "hubspot" || dls[0].ErrorMessage == "" {
		t.Fatalf("page 1 = %+v", dls)
	}
	rest, err := ListDeadLetters(ctx, b.st, DeadLetterQuery{Direction: store.DirectionOutbound, Key: "hubspot", After: dls[1].ID})
	if err != nil || len(rest) != 1 {
		t.Fatalf("page 2 = %+v, %v", rest, err)
	}

	res, err := RetryDeadLetters(ctx, b.st, RetryRequest{Direction: store.DirectionOutbound, IDs: ids[:1]})
	if err != nil || res.Requeued != 1 {
		t.Fatalf("retry by id = %+v, %v", res, err)
	}
	res, err = RetryDeadLetters(ctx, b.st, RetryRequest{Direction: store.DirectionOutbound, Key: "hubspot", All: true})
	if err != nil || res.Requeued != 2 {
		t.Fatalf("retry all = %+v, %v", res, err)
	}
	m, err := LoadMetrics(ctx, b.st)
	if err != nil {
		t.Fatal(err)
	}
	if m.DeadLetters != 1 || m.Pending != 3 {
		t.Fatalf("after retry: dead %d pending %d; want the other destination's 1 dead and 3 pending", m.DeadLetters, m.Pending)
	}

	for _, bad := range []RetryRequest{
		{Direction: "sideways", IDs: []string{"x"}},
		{Direction: store.DirectionOutbound},
		{Direction: store.DirectionOutbound, All: true},
		{Direction: store.DirectionOutbound, IDs: []string{"x"}, All: true, Key: "hubspot"},
		{Direction: store.DirectionOutbound, IDs: make([]string, DiscardIDsMax+1)},
	} {
		if _, err := RetryDeadLetters(ctx, b.st, bad); !errors.Is(err, ErrBadRequest) {
			t.Errorf("RetryDeadLetters(%+v) = %v, want ErrBadRequest", bad, err)
		}
	}
}

func TestCleanupKeepsInboundLonger(t *testing.T) {
	t.Parallel()
	b := setupOps(t)
	ctx := context.Background()
	if _, err := b.st.Outbound().Enqueue(ctx, outboundEvent(t, "hubspot", "r1")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.st.Inbound().Enqueue(ctx, inboundEvent("hubspot", "e1")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.st.Outbound().Enqueue(ctx, outboundEvent(t, "hubspot", "pending")); err != nil {
		t.Fatal(err)
	}
	out, err := b.st.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: 1})
	if err != nil || len(out) != 1 {
		t.Fatalf("claim outbound: %v %v", out, err)
	}
	in, err := b.st.Inbound().Claim(ctx, store.ClaimParams{Key: "hubspot"})
	if err != nil || len(in) != 1 {
		t.Fatalf("claim inbound: %v %v", in, err)
	}
	if err := b.st.Outbound().Complete(ctx, out[0].Lease()); err != nil {
		t.Fatal(err)
	}
	if err := b.st.Inbound().Complete(ctx, in[0].Lease()); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(8 * 24 * time.Hour)
	res, err := Cleanup(ctx, b.st, CleanupConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outbound != 1 || res.Inbound != 0 {
		t.Fatalf("after 8 days: %+v, want the outbound event only (inbound is kept 30 days)", res)
	}
	b.clock.Advance(23 * 24 * time.Hour)
	if res, err = Cleanup(ctx, b.st, CleanupConfig{}); err != nil || res.Inbound != 1 || res.Outbound != 0 {
		t.Fatalf("after 31 days: %+v, %v; want the inbound event and never the pending one", res, err)
	}
	m, _ := LoadMetrics(ctx, b.st)
	if m.Pending != 1 {
		t.Fatalf("pending after cleanup = %d, want 1", m.Pending)
	}
	if _, err := Cleanup(ctx, b.st, CleanupConfig{InboundRetention: -time.Hour}); err == nil {
		t.Fatal("negative retention accepted")
	}
}

// TestCleanupSubscriptionsAndDiscarded: Cleanup deletes, on every database
// and in batches smaller than what it deletes, the subscription requests
// settled for good past their retention but each contact's newest, and the
// dead letters discarded past theirs; pending and failed requests, and what
// is newer than its retention, stay.
func TestCleanupSubscriptionsAndDiscarded(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setupDialect(t, d)
		ctx := context.Background()
		subs := subscriptions.NewStore(b.st)
		submit := func(contact, key string) subscriptions.Stored {
			t.Helper()
			r, err := subs.Submit(ctx, subscriptions.Request{BrandID: "acme", ProductID: "news", ContactKey: contact, DesiredState: "subscribed"}, key, 1)
			if err != nil {
				t.Fatal(err)
			}
			return r.Stored
		}
		// Dead letters of their own destination: the requests' events go
		// to hubspot. Each retention is tested with something past it and
		// something it keeps that the other's would not: the first discards
		// are 91 days old at the cleanup, the requests and the last discard
		// 60, cy's requests 29.
		dead := b.deadOutbound(t, "crm", 3)
		if _, err := DiscardDeadLetters(ctx, b.st, DiscardRequest{Direction: store.DirectionOutbound, IDs: dead[:2], Reason: "test contacts"}); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(31 * 24 * time.Hour)
		if _, err := DiscardDeadLetters(ctx, b.st, DiscardRequest{Direction: store.DirectionOutbound, IDs: dead[2:], Reason: "later"}); err != nil {
			t.Fatal(err)
		}
		var old []subscriptions.Stored
		for i := range 3 {
			old = append(old, submit("ada@example.com", fmt.Sprint("ada-", i)))
		}
		if _, err := subs.Settle(ctx, old[2], subscriptions.StatusSynced, ""); err != nil { // old[0], old[1] superseded
			t.Fatal(err)
		}
		failed := submit("bob@example.com", "bob-0")
		if err := subs.SetStatus(ctx, failed.ID, subscriptions.StatusFailed, "opted out"); err != nil {
			t.Fatal(err)
		}
		pending := submit("bob@example.com", "bob-1")
		submit("bob@example.com", "bob-2")

		b.clock.Advance(31 * 24 * time.Hour)
		recent := submit("cy@example.com", "cy-0")
		if _, err := subs.Settle(ctx, submit("cy@example.com", "cy-1"), subscriptions.StatusSynced, ""); err != nil { // recent superseded
			t.Fatal(err)
		}

		b.clock.Advance(29 * 24 * time.Hour)
		res, err := Cleanup(ctx, b.st, CleanupConfig{BatchSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		if res.SubscriptionRequests != 2 || res.Discarded != 2 {
			t.Fatalf("Cleanup = %+v; want ada's 2 superseded requests of 60 days ago (retention 30 days) and the 2 dead letters discarded 91 days ago (90 days)", res)
		}
		for _, r := range old[:2] {
			if _, err := subs.Get(ctx, r.ID); !errors.Is(err, subscriptions.ErrNotFound) {
				t.Errorf("superseded request %s: Get = %v, want ErrNotFound", r.ID, err)
			}
		}
		for name, r := range map[string]subscriptions.Stored{"newest": old[2], "failed": failed, "pending": pending, "recent": recent} {
			if _, err := subs.Get(ctx, r.ID); err != nil {
				t.Errorf("%s request %s: %v; want it kept", name, r.ID, err)
			}
		}
		got, err := ListDiscarded(ctx, b.st, 0)
		if err != nil || len(got) != 1 || got[0].ID != dead[2] {
			t.Fatalf("discarded after the cleanup = %+v, %v; want only %s, discarded 60 days ago", got, err, dead[2])
		}
		// Shorter retentions reach what the defaults kept.
		res, err = Cleanup(ctx, b.st, CleanupConfig{SubscriptionRetention: 24 * time.Hour, DiscardedRetention: 24 * time.Hour})
		if err != nil || res.SubscriptionRequests != 1 || res.Discarded != 1 {
			t.Fatalf("Cleanup with retentions of a day = %+v, %v; want the recent superseded request and the last discarded dead letter", res, err)
		}
	})
}

func TestCleanupConfigValidateNamesTheRetention(t *testing.T) {
	t.Parallel()
	err := CleanupConfig{SubscriptionRetention: -time.Hour, DiscardedRetention: -time.Minute}.Validate()
	for _, want := range []string{"SubscriptionRetention is -1h0m0s", "DiscardedRetention is -1m0s", "use a positive duration (0 means the default)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v; want it to say %q", err, want)
		}
	}
	if err := (CleanupConfig{}).Validate(); err != nil {
		t.Errorf("zero CleanupConfig: %v", err)
	}
	if c := (CleanupConfig{}).WithDefaults(); c.SubscriptionRetention != SubscriptionRetentionDefault || c.DiscardedRetention != DiscardedRetentionDefault {
		t.Errorf("WithDefaults = %+v", c)
	}
}

func TestReconcileReportsExpiredLeasesAndOverdue(t *testing.T) {
	t.Parallel()
	b := setupOps(t)
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		if _, err := b.st.Outbound().Enqueue(ctx, outboundEvent(t, "hubspot", id)); err != nil {
			t.Fatal(err)
		}
	}
	leased, err := b.st.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: 1, LeaseDuration: time.Minute, Owner: "dead-worker"})
	if err != nil || len(leased) != 1 {
		t.Fatalf("claim: %v %v", leased, err)
	}
	res, err := Reconcile(ctx, b.st, ReconcileRequest{OlderThan: "10m"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Candidates) != 0 {
		t.Fatalf("fresh queue: candidates %+v, want none", res.Candidates)
	}
	b.clock.Advance(11 * time.Minute)
	res, err = Reconcile(ctx, b.st, ReconcileRequest{OlderThan: "10m"})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, c := range res.Candidates {
		reasons[c.ID] = c.Reason
	}
	if reasons[leased[0].ID] != ReasonExpiredLease || len(reasons) != 2 || res.Scheduled != 0 {
		t.Fatalf("candidates = %+v", res.Candidates)
	}
	if _, err := Reconcile(ctx, b.st, ReconcileRequest{OlderThan: "soon"}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("bad duration: %v", err)
	}
}
