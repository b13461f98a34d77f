package dispatch

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/store"
)

func TestPublishOncePerEvent(t *testing.T) { dbtest.Each(t, testPublishOncePerEvent) }

func testPublishOncePerEvent(t *testing.T, d store.Dialect) {
	b := setup(t, d, options{})
	ctx := context.Background()
	r1 := b.insert(t, "a@example.com")
	b.insert(t, "b@example.com")
	s, err := b.pub.RunOnce(ctx)
	if err != nil || s.Claimed != 2 || s.Published != 2 {
		t.Fatalf("RunOnce = %+v, %v; want 2 published", s, err)
	}
	pubs := b.qs.published()
	if len(pubs) != 2 {
		t.Fatalf("%d publishes, want 2", len(pubs))
	}
	for _, p := range pubs {
		if p.Dedup != p.Body.EventID || p.Dedup == "" {
			t.Errorf("dedup id %q for event %q, want the event id", p.Dedup, p.Body.EventID)
		}
		if got := p.H.Get("Upstash-Flow-Control-Value"); got != "parallelism=12, rate=150, period=10s" {
			t.Errorf("flow control %q", got)
		}
		if p.H.Get("Upstash-Flow-Control-Key") != "hubspot-test" || p.H.Get("Upstash-Retries") != "5" || p.H.Get("Upstash-Method") != "POST" {
			t.Errorf("headers %v", p.H)
		}
	}
	ev := b.events(t, r1)[0]
	ps, err := ReadPublishState(ctx, b.st, ev.ID)
	if err != nil || ps.Status != PublishPublished || ps.MessageID == "" || ps.Attempts != 1 || ps.PublishedAt == nil {
		t.Fatalf("publish state %+v, %v", ps, err)
	}
	if got := b.event(t, ev.ID); got.Status != store.StatusPending || got.Attempt != 0 {
		t.Fatalf("published event is %s (attempt %d); it must stay pending, unclaimed", got.Status, got.Attempt)
	}
	// Published events are not published again, however often the publisher runs.
	b.clock.Advance(5 * time.Minute)
	if s, err := b.pub.RunOnce(ctx); err != nil || s.Claimed != 0 {
		t.Fatalf("second RunOnce = %+v, %v; want nothing", s, err)
	}
}

func TestPublishFailureBacksOff(t *testing.T) { dbtest.Each(t, testPublishFailureBacksOff) }

func testPublishFailureBacksOff(t *testing.T, d store.Dialect) {
	b := setup(t, d, options{})
	ctx := context.Background()
	rec := b.insert(t, "a@example.com")
	b.qs.fail = 1
	if s, err := b.pub.RunOnce(ctx); err == nil || s.Failed != 1 {
		t.Fatalf("RunOnce = %+v, %v; want one failure", s, err)
	}
	id := b.events(t, rec)[0].ID
	if ps, _ := ReadPublishState(ctx, b.st, id); ps.Status != PublishRetry {
		t.Fatalf("state %+v, want publish_retry", ps)
	}
	if s, _ := b.pub.RunOnce(ctx); s.Claimed != 0 {
		t.Fatalf("published again before the backoff: %+v", s)
	}
	b.clock.Advance(2 * time.Second)
	if s, err := b.pub.RunOnce(ctx); err != nil || s.Published != 1 {
		t.Fatalf("after the backoff RunOnce = %+v, %v", s, err)
	}
	if ps, _ := ReadPublishState(ctx, b.st, id); ps.Status != PublishPublished || ps.Attempts != 2 {
		t.Fatalf("state %+v, want published after 2 attempts", ps)
	}
	if b.pub.Metrics().Snapshot().PublishFailed != 1 {
		t.Fatal("publish failure not counted")
	}
}

// A publisher that dies between QStash's answer and its mark: the publish
// lease expires and the next claim publishes with the same deduplication id,
// so QStash holds one message.
func TestCrashBetweenPublishAndMark(t *testing.T) { dbtest.Each(t, testCrashBetweenPublishAndMark) }

func testCrashBetweenPublishAndMark(t *testing.T, d store.Dialect) {
	b := setup(t, d, options{})
	ctx := context.Background()
	rec := b.insert(t, "a@example.com")
	// The dying publisher: claims and publishes, never marks.
	cs, err := b.pub.ps.claim(ctx, "hubspot", 10, time.Minute)
	if err != nil || len(cs) != 1 {
		t.Fatalf("claim = %v, %v", cs, err)
	}
	if _, err := b.pub.cfg.QStash.Publish(ctx, messageFor(b.pub, cs[0])); err != nil {
		t.Fatal(err)
	}
	// Before the lease expires nobody publishes it again.
	if s, _ := b.pub.RunOnce(ctx); s.Claimed != 0 {
		t.Fatalf("claimed under a live publish lease: %+v", s)
	}
	b.clock.Advance(time.Minute + time.Second)
	if s, err := b.pub.RunOnce(ctx); err != nil || s.Published != 1 || s.Deduplicated != 1 {
		t.Fatalf("re-publish = %+v, %v; want one deduplicated publish", s, err)
	}
	pubs := b.qs.published()
	if len(pubs) != 2 || pubs[0].Dedup != pubs[1].Dedup || b.qs.messages() != 1 {
		t.Fatalf("publishes %+v, messages %d; want the same dedup id twice, one message", pubs, b.qs.messages())
	}
	// A late mark of the dead publisher is fenced off.
	if err := b.pub.ps.markPublished(ctx, cs[0], "msg_stale"); err != errFenced {
		t.Fatalf("stale mark = %v, want errFenced", err)
	}
	// The (one) delivery applies it.
	if w := b.deliver(t, b.events(t, rec)[0].ID); w.Code != http.StatusOK {
		t.Fatalf("deliver = %d %s", w.Code, w.Body)
	}
	if _, ok := b.contact("a@example.com"); !ok {
		t.Fatal("contact not in HubSpot")
	}
}

func TestDeliverySignatureRefused(t *testing.T) { dbtest.Each(t, testDeliverySignatureRefused) }

func testDeliverySignatureRefused(t *testing.T, d store.Dialect) {
	b := setup(t, d, options{})
	rec := b.insert(t, "a@example.com")
	id := b.events(t, rec)[0].ID
	body, _ := json.Marshal(Body{EventID: id})
	tampered := b.signed([]byte(`{"eventId":"`+id+`" }`), testKey)
	tampered.Body = http.NoBody
	tamperedReq := b.signed(body, testKey)
	// the signature of another body on this body
	other := b.signed([]byte(`{"eventId":"x"}`), testKey)
	tamperedReq.Header.Set("Upstash-Signature", other.Header.Get("Upstash-Signature"))
	expired := b.signed(body, testKey)
	b.clock.Advance(10 * time.Minute)
	cases := map[string]*http.Request{
		"missing header": b.signed(body, ""),
		"wrong key":      b.signed(body, "sig_wrong"),
		"tampered body":  tamperedReq,
		"expired":        expired,
	}
	for name, r := range cases {
		if w := b.serve(r); w.Code != http.StatusUnauthorized {
			t.Errorf("%s: %d %s, want 401", name, w.Code, w.Body)
		}
	}
	if ev := b.event(t, id); ev.Status != store.StatusPending || ev.Attempt != 0 {
		t.Fatalf("a refused delivery touched the event: %s attempt %d", ev.Status, ev.Attempt)
	}
	if _, ok := b.contact("a@example.com"); ok {
		t.Fatal("a refused delivery reached HubSpot")
	}
	// The next key is accepted too.
	if w := b.serve(b.signed(body, testNextKey)); w.Code != http.StatusOK {
		t.Fatalf("next key: %d %s", w.Code, w.Body)
	}
	if got := b.handler.cfg.Metrics.Snapshot().Deliveries; got[401] != 4 || got[200] != 1 {
		t.Fatalf("deliveries counted %v", got)
	}
}

// Malformed, oversized and unparseable deliveries get their answer on every
// database: an eventId no database holds as text (NUL) is 489, not a 500
// that QStash retries.
func TestDeliveryBadInput(t *testing.T) { dbtest.Each(t, testDeliveryBadInput) }

func testDeliveryBadInput(t *testing.T, d store.Dialect) {
	b := setup(t, d, options{})
	big := []byte(`{"eventId":"` + strings.Repeat("x", MaxBodyBytes) + `"}`)
	if w := b.serve(b.signed(big, testKey)); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized: %d, want 413", w.Code)
	}
	for _, body := range []string{`not json`, `{}`, `{"eventId":5}`, `{"eventId":""}`, `{"eventId":"a\u0000b"}`} {
		w := b.serve(b.signed([]byte(body), testKey))
		if w.Code != StatusNonRetryable || w.Header().Get("Upstash-NonRetryable-Error") != "true" {
			t.Errorf("signed %q: %d %v, want 489 non-retryable", body, w.Code, w.Header())
		}
	}
	if w := b.deliver(t, "no-such-event"); w.Code != http.StatusOK {
		t.Errorf("unknown event: %d, want 200 (nothing to do)", w.Code)
	}
	r := b.signed([]byte(`{}`), testKey)
	r.Method = http.MethodGet
	if w := b.serve(r); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", w.Code)
	}
}

func TestDuplicateDelivery(t *testing.T) { dbtest.Each(t, testDuplicateDelivery) }

func testDuplicateDelivery(t *testing.T, d store.Dialect) {
	b := setup(t, d, options{})
	rec := b.insert(t, "a@example.com")
	id := b.events(t, rec)[0].ID
	if w := b.deliver(t, id); w.Code != http.StatusOK {
		t.Fatalf("first delivery: %d %s", w.Code, w.Body)
	}
	if ev := b.event(t, id); ev.Status != store.StatusProcessed {
		t.Fatalf("event %s after delivery", ev.Status)
	}
	calls := b.sim.Counters().Requests
	for range 3 {
		w := b.deliver(t, id)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "already processed") {
			t.Fatalf("duplicate delivery: %d %s", w.Code, w.Body)
		}
	}
	if got := b.sim.Counters().Requests; got != calls {
		t.Fatalf("duplicate deliveries called HubSpot %d times", got-calls)
	}
	// A duplicate arriving while the first delivery holds the event waits.
	rec2 := b.insert(t, "b@example.com")
	id2 := b.events(t, rec2)[0].ID
	if _, err := b.st.Outbound().ClaimIDs(context.Background(), []string{id2}, store.ClaimParams{Key: "hubspot", LeaseDuration: time.Minute, Owner: "other"}); err != nil {
		t.Fatal(err)
	}
	w := b.deliver(t, id2)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("delivery of a held event: %d %v", w.Code, w.Header())
	}
}

func TestBudgetRefusal(t *testing.T) { dbtest.Each(t, testBudgetRefusal) }

func testBudgetRefusal(t *testing.T, d store.Dialect) {
	b := setup(t, d, options{budgetLimit: 1})
	ctx := context.Background()
	rec := b.insert(t, "a@example.com")
	id := b.events(t, rec)[0].ID
	// Someone else spent the window.
	if res, err := b.budget.Reserve(ctx, testBudgetKey, 1); err != nil || !res.Granted {
		t.Fatalf("reserve: %+v %v", res, err)
	}
	w := b.deliver(t, id)
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("delivery without budget: %d %s, want 503", w.Code, w.Body)
	}
	secs, err := strconv.Atoi(w.Header().Get("Retry-After"))
	if err != nil || secs < 1 || secs > 11 {
		t.Fatalf("Retry-After %q, want 1..11 seconds (one budget window)", w.Header().Get("Retry-After"))
	}
	ev := b.event(t, id)
	if ev.Status != store.StatusPending || ev.RetryCount != 0 || ev.LeaseExpiresDate != nil {
		t.Fatalf("after refusal: %s retries %d lease %v; want released, no attempt used", ev.Status, ev.RetryCount, ev.LeaseExpiresDate)
	}
	if _, ok := b.contact("a@example.com"); ok {
		t.Fatal("refused delivery reached HubSpot")
	}
	// QStash honours Retry-After; then the budget has room.
	b.clock.Advance(time.Duration(secs) * time.Second)
	if w := b.deliver(t, id); w.Code != http.StatusOK {
		t.Fatalf("later delivery: %d %s", w.Code, w.Body)
	}
	if _, ok := b.contact("a@example.com"); !ok {
		t.Fatal("contact not in HubSpot after the later delivery")
	}
}

// Events of one record delivered out of order: the later one pushes the
// earlier first, so HubSpot ends with the later value and each is applied once.
func TestOutOfOrderDelivery(t *testing.T) { dbtest.Each(t, testOutOfOrderDelivery) }

func testOutOfOrderDelivery(t *testing.T, d store.Dialect) {
	b := setup(t, d, options{})
	ctx := context.Background()
	r, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "a@example.com", "first_name": "One"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.recs.Update(ctx, "contacts", r.ID, r.Version, map[string]any{"first_name": "Two"}); err != nil {
		t.Fatal(err)
	}
	evs := b.events(t, r.ID)
	if len(evs) != 2 {
		t.Fatalf("%d events", len(evs))
	}
	// While another delivery holds the first event, the second waits. (The
	// holder took the first alone, as a delivery that claimed it before the
	// second was queued did.)
	if _, err := b.st.Outbound().ClaimIDs(ctx, []string{evs[0].ID}, store.ClaimParams{Key: "hubspot", LeaseDuration: time.Minute, Owner: "other", MaxPerRecord: 1}); err != nil {
		t.Fatal(err)
	}
	if w := b.deliver(t, evs[1].ID); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("second event while the first is held: %d %s, want 503", w.Code, w.Body)
	}
	if ev := b.event(t, evs[1].ID); ev.Status != store.StatusPending {
		t.Fatalf("second event applied before the first: %s", ev.Status)
	}
	// The holder died; its lease expires. The second event's delivery now
	// pushes the first, then itself.
	b.clock.Advance(time.Minute + time.Second)
	if w := b.deliver(t, evs[1].ID); w.Code != http.StatusOK {
		t.Fatalf("second event: %d %s", w.Code, w.Body)
	}
	for _, e := range evs {
		if got := b.event(t, e.ID); got.Status != store.StatusProcessed {
			t.Fatalf("event %s is %s", e.ID, got.Status)
		}
	}
	c, ok := b.contact("a@example.com")
	if !ok || c.Properties["firstname"] != "Two" {
		t.Fatalf("HubSpot has %v, want firstname Two", c.Properties)
	}
	// The first event's own (late) delivery is a no-op.
	if w := b.deliver(t, evs[0].ID); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "already processed") {
		t.Fatalf("late first delivery: %d %s", w.Code, w.Body)
	}
	if c2, _ := b.contact("a@example.com"); c2.Properties["firstname"] != "Two" {
		t.Fatal("late delivery changed HubSpot")
	}
}

// A delivery of a record's head pushes the record's due changes with it,
// coalesced into one write, as poll mode does; the followers' own deliveries
// are then no-ops.
func TestDeliveryCoalesces(t *testing.T) { dbtest.Each(t, testDeliveryCoalesces) }

func testDeliveryCoalesces(t *testing.T, d store.Dialect) {
	b := setup(t, d, options{})
	ctx := context.Background()
	r, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "a@example.com", "first_name": "One"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Two", "Three"} {
		if r, err = b.recs.Update(ctx, "contacts", r.ID, r.Version, map[string]any{"first_name": name}); err != nil {
			t.Fatal(err)
		}
	}
	evs := b.events(t, r.ID)
	if len(evs) != 3 {
		t.Fatalf("%d events, want 3", len(evs))
	}
	calls := b.sim.Counters().Requests
	if w := b.deliver(t, evs[0].ID); w.Code != http.StatusOK {
		t.Fatalf("delivery of the head: %d %s", w.Code, w.Body)
	}
	for _, e := range evs {
		if got := b.event(t, e.ID); got.Status != store.StatusProcessed {
			t.Fatalf("event %s is %s after its head's delivery; want processed with it", e.ID, got.Status)
		}
	}
	if got := b.sim.Counters().Requests - calls; got != 1 {
		t.Fatalf("the head's delivery made %d HubSpot calls, want 1 write of the coalesced changes", got)
	}
	c, ok := b.contact("a@example.com")
	if !ok || c.Properties["firstname"] != "Three" {
		t.Fatalf("HubSpot has %v, want firstname Three", c.Properties)
	}
	for _, e := range evs[1:] {
		if w := b.deliver(t, e.ID); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "already processed") {
			t.Fatalf("follower's own delivery: %d %s, want 200 already processed", w.Code, w.Body)
		}
	}
	if got := b.sim.Counters().Requests - calls; got != 1 {
		t.Fatalf("followers' deliveries called HubSpot %d more times", got-1)
	}
}

// An event HubSpot can never take is dead-lettered and answered 489, so that
// QStash stops delivering it.
func TestPermanentFailure(t *testing.T) {
	b := setup(t, store.SQLite, options{})
	ctx := context.Background()
	res, err := b.st.Outbound().Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "widgets", RecordID: "w1",
		EventType: store.EventCreate, Payload: json.RawMessage(`{"id":"w1","fields":{}}`)})
	if err != nil {
		t.Fatal(err)
	}
	w := b.deliver(t, res.ID)
	if w.Code != StatusNonRetryable || w.Header().Get("Upstash-NonRetryable-Error") != "true" {
		t.Fatalf("permanent failure: %d %v %s", w.Code, w.Header(), w.Body)
	}
	if ev := b.event(t, res.ID); ev.Status != store.StatusFailed {
		t.Fatalf("event is %s, want failed (dead letter)", ev.Status)
	}
	if w := b.deliver(t, res.ID); w.Code != http.StatusOK {
		t.Fatalf("delivery of a dead letter: %d", w.Code)
	}
}

// The sweep re-publishes an event published long ago and still unfinished
// under a new deduplication id; whichever message arrives first applies it,
// the other is a no-op.
func TestReconcileRepublishes(t *testing.T) { dbtest.Each(t, testReconcileRepublishes) }

func testReconcileRepublishes(t *testing.T, d store.Dialect) {
	b := setup(t, d, options{})
	ctx := context.Background()
	rec := b.insert(t, "a@example.com")
	id := b.events(t, rec)[0].ID
	if _, err := b.pub.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	woke := 0
	sched := Rescheduler{Destination: "hubspot", Wake: func() { woke++ }, Metrics: b.pub.Metrics()}
	req := ops.ReconcileRequest{OlderThan: "10m"}
	res, err := ops.Repair(ctx, b.st, req, sched)
	if err != nil || res.Scheduled != 0 {
		t.Fatalf("fresh publish: %+v, %v; want nothing scheduled", res, err)
	}
	b.clock.Advance(11 * time.Minute)
	res, err = ops.Repair(ctx, b.st, req, sched)
	if err != nil || res.Checked != 1 || res.Scheduled != 1 || woke != 1 {
		t.Fatalf("old publish: %+v, %v (woke %d); want 1 checked, 1 scheduled", res, err, woke)
	}
	// Idempotent: a second sweep before the publisher ran schedules nothing.
	if res, _ := ops.Repair(ctx, b.st, req, sched); res.Scheduled != 0 {
		t.Fatalf("second sweep scheduled %d", res.Scheduled)
	}
	if s, err := b.pub.RunOnce(ctx); err != nil || s.Published != 1 {
		t.Fatalf("re-publish: %+v, %v", s, err)
	}
	pubs := b.qs.published()
	if len(pubs) != 2 || pubs[1].Dedup != DedupID(id, 1) || pubs[1].Dedup == pubs[0].Dedup || pubs[1].Body.EventID != id {
		t.Fatalf("publishes %+v; want the second under %q", pubs, DedupID(id, 1))
	}
	// The original arrives late after all, then the re-publish.
	if w := b.deliver(t, id); w.Code != http.StatusOK {
		t.Fatalf("late original: %d %s", w.Code, w.Body)
	}
	calls := b.sim.Counters().Requests
	if w := b.deliver(t, id); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "already processed") {
		t.Fatalf("re-published delivery: %d %s", w.Code, w.Body)
	}
	if b.sim.Counters().Requests != calls {
		t.Fatal("second delivery called HubSpot")
	}
	b.clock.Advance(11 * time.Minute)
	if res, _ := ops.Repair(ctx, b.st, req, sched); res.Checked != 0 || res.Scheduled != 0 {
		t.Fatalf("finished event swept: %+v", res)
	}
}

// An expired lease is released by the sweep in both modes.
func TestReconcileReleasesExpiredLeases(t *testing.T) {
	dbtest.Each(t, testReconcileReleasesExpiredLeases)
}

func testReconcileReleasesExpiredLeases(t *testing.T, d store.Dialect) {
	for _, mode := range []string{"poll", "qstash"} {
		b := setup(t, d, options{})
		ctx := context.Background()
		rec := b.insert(t, "a@example.com")
		id := b.events(t, rec)[0].ID
		var sched ops.Scheduler = ops.PollScheduler{}
		if mode == "qstash" {
			sched = Rescheduler{Destination: "hubspot"}
			if _, err := b.pub.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := b.st.Outbound().ClaimIDs(ctx, []string{id}, store.ClaimParams{Key: "hubspot", LeaseDuration: time.Minute, Owner: "dead"}); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(2 * time.Minute)
		res, err := ops.Repair(ctx, b.st, ops.ReconcileRequest{OlderThan: "10m"}, sched)
		if err != nil || res.Scheduled != 1 {
			t.Fatalf("%s: %+v, %v; want the expired lease scheduled", mode, res, err)
		}
		if ev := b.event(t, id); ev.Status != store.StatusPending || ev.LeaseOwner != "" {
			t.Fatalf("%s: event %s owner %q after repair", mode, ev.Status, ev.LeaseOwner)
		}
		if mode == "qstash" {
			if ps, _ := ReadPublishState(ctx, b.st, id); ps.Generation != 1 || ps.Status != "" {
				t.Fatalf("qstash: publish state %+v, want generation 1 to publish", ps)
			}
		}
	}
}

// Only a record's head is published: its next event goes out once the head
// is done, so a record's deliveries never race each other.
func TestPublishRecordHeadsOnly(t *testing.T) { dbtest.Each(t, testPublishRecordHeadsOnly) }

func testPublishRecordHeadsOnly(t *testing.T, d store.Dialect) {
	b := setup(t, d, options{})
	ctx := context.Background()
	r, err := b.recs.Insert(ctx, "contacts", map[string]any{"email": "h@example.com", "first_name": "One"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = b.recs.Update(ctx, "contacts", r.ID, r.Version, map[string]any{"first_name": "Two"}); err != nil {
		t.Fatal(err)
	}
	evs := b.events(t, r.ID)
	if s, err := b.pub.RunOnce(ctx); err != nil || s.Published != 1 {
		t.Fatalf("RunOnce = %+v, %v; want the head only", s, err)
	}
	if got := b.qs.published()[0].Body.EventID; got != evs[0].ID {
		t.Fatalf("published %s, want the head %s", got, evs[0].ID)
	}
	// The head's delivery takes the second event along (coalescing): it is
	// never published.
	if w := b.deliver(t, evs[0].ID); w.Code != http.StatusOK {
		t.Fatalf("head: %d %s", w.Code, w.Body)
	}
	if s, err := b.pub.RunOnce(ctx); err != nil || s.Published != 0 {
		t.Fatalf("after the head's delivery: %+v, %v; want nothing published (the second went with the head)", s, err)
	}
	// A change queued while the record's head is out waits for it; once the
	// head is done, it is the new head and is published.
	if r, err = b.recs.Update(ctx, "contacts", r.ID, r.Version, map[string]any{"first_name": "Three"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.recs.Update(ctx, "contacts", r.ID, r.Version, map[string]any{"first_name": "Four"}); err != nil {
		t.Fatal(err)
	}
	evs = b.events(t, r.ID)[2:]
	if s, err := b.pub.RunOnce(ctx); err != nil || s.Published != 1 || b.qs.published()[1].Body.EventID != evs[0].ID {
		t.Fatalf("after two more changes: %+v, %v; want their head %s published alone", s, err, evs[0].ID)
	}
	held, err := b.st.Outbound().ClaimIDs(ctx, []string{evs[0].ID}, store.ClaimParams{Key: "hubspot", LeaseDuration: time.Minute, Owner: "other", MaxPerRecord: 1})
	if err != nil || len(held) != 1 {
		t.Fatalf("ClaimIDs of the head alone = %v, %v", held, err)
	}
	if s, err := b.pub.RunOnce(ctx); err != nil || s.Published != 0 {
		t.Fatalf("while the head is out: %+v, %v; want nothing published", s, err)
	}
	if err := b.st.Outbound().Complete(ctx, held[0].Lease()); err != nil {
		t.Fatal(err)
	}
	if s, err := b.pub.RunOnce(ctx); err != nil || s.Published != 1 || b.qs.published()[2].Body.EventID != evs[1].ID {
		t.Fatalf("after the head: %+v, %v; want the next event %s published", s, err, evs[1].ID)
	}
}

// A dead letter re-queued (hubsync dlq retry) is published again at once,
// under the next generation's deduplication id: the first message's id is
// still in QStash's window.
func TestRequeuedDeadLetterIsPublishedAgain(t *testing.T) {
	dbtest.Each(t, testRequeuedDeadLetterIsPublishedAgain)
}

func testRequeuedDeadLetterIsPublishedAgain(t *testing.T, d store.Dialect) {
	b := setup(t, d, options{})
	ctx := context.Background()
	res, err := b.st.Outbound().Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "widgets", RecordID: "w1",
		EventType: store.EventCreate, Payload: json.RawMessage(`{"id":"w1","fields":{}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := b.pub.RunOnce(ctx); err != nil || s.Published != 1 {
		t.Fatalf("publish: %+v, %v", s, err)
	}
	if w := b.deliver(t, res.ID); w.Code != StatusNonRetryable {
		t.Fatalf("delivery: %d, want 489", w.Code)
	}
	if s, _ := b.pub.RunOnce(ctx); s.Claimed != 0 {
		t.Fatalf("a dead letter was published: %+v", s)
	}
	if n, err := b.st.Outbound().Requeue(ctx, res.ID); err != nil || n != 1 {
		t.Fatalf("requeue: %d, %v", n, err)
	}
	if s, err := b.pub.RunOnce(ctx); err != nil || s.Published != 1 {
		t.Fatalf("after the requeue: %+v, %v; want it published again", s, err)
	}
	pubs := b.qs.published()
	if len(pubs) != 2 || pubs[1].Dedup != DedupID(res.ID, 1) {
		t.Fatalf("publishes %+v; want the second under %q", pubs, DedupID(res.ID, 1))
	}
	if s, _ := b.pub.RunOnce(ctx); s.Claimed != 0 {
		t.Fatalf("published a third time: %+v", s)
	}
}
