package inbound

import (
	"context"
	"errors"
	"fmt"
	"github.com/hubsync/hubsync/internal/testcheck"
	"github.com/hubsync/hubsync/internal/testwait"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const t0 = int64(1_900_000_000_000) // an occurredAt in ms

var nextEventID atomic.Int64

func whEvent(typ string, objectID int64, at int64, mods ...func(*hubspot.WebhookEvent)) hubspot.WebhookEvent {
	ev := hubspot.WebhookEvent{EventID: 1000 + nextEventID.Add(1), PortalID: 62515, AppID: 1, SubscriptionType: typ, ObjectID: objectID, OccurredAt: at, ChangeSource: "CRM_UI"}
	for _, m := range mods {
		m(&ev)
	}
	return ev
}

func prop(name, value string) func(*hubspot.WebhookEvent) {
	return func(ev *hubspot.WebhookEvent) { ev.PropertyName, ev.PropertyValue = name, value }
}

func contactObj(id, email, first string, updated time.Time) hubspot.Object {
	return hubspot.Object{ID: id, UpdatedAt: updated, Properties: map[string]string{
		"email": email, "firstname": first, "lastname": "", "phone": "", "company": "", "lifecyclestage": "",
	}}
}

func TestWorkerAppliesEachKind(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reader := &fakeReader{objects: map[string]hubspot.Object{
		"1": contactObj("1", "ada@example.com", "Ada", time.UnixMilli(t0)),
		"2": contactObj("2", "bob@example.com", "Bob", time.UnixMilli(t0)),
		"3": contactObj("3", "cy@example.com", "Cy", time.UnixMilli(t0)),
	}}
	w := b.newWorker(t, reader, "w1")
	b.deliverEvents(t,
		whEvent("contact.creation", 1, t0),
		whEvent("contact.creation", 2, t0),
		whEvent("contact.creation", 3, t0),
		whEvent("contact.propertyChange", 1, t0+10, prop("lastname", "Lovelace")),
		whEvent("contact.propertyChange", 1, t0+11, prop("hs_unmapped_thing", "x")),
		whEvent("contact.associationChange", 1, t0+12),
		whEvent("ticket.creation", 1, t0+13),
		whEvent("contact.deletion", 2, t0+20),
		whEvent("contact.merge", 1, t0+30, func(ev *hubspot.WebhookEvent) {
			ev.PrimaryObjectID, ev.MergedObjectIDs, ev.NewObjectID = 1, []int64{3}, 1
		}),
	)
	drain(t, w)
	if got := b.statusCounts(t); got["processed"] != 9 {
		t.Fatalf("statuses %v, want 9 processed", got)
	}
	ada, ok := b.applier.record("contacts", "1")
	if !ok || ada.Fields["first_name"] != "Ada" || ada.Fields["last_name"] != "Lovelace" || ada.Fields["email"] != "ada@example.com" {
		t.Fatalf("contact 1 = %+v", ada)
	}
	if _, ok := ada.Fields["hs_unmapped_thing"]; ok {
		t.Error("unmapped property applied")
	}
	if bob, _ := b.applier.record("contacts", "2"); !bob.Deleted {
		t.Error("contact 2 not deleted")
	}
	if _, ok := b.applier.record("contacts", "3"); ok {
		t.Error("merged-away contact 3 still resolves")
	}
	if reader.calls != 1 {
		t.Errorf("%d BatchRead calls for three creations of one type, want 1", reader.calls)
	}
	// Applied: 3 creations, 1 update, 1 delete, 1 merge. Ignored ones never reach the Applier.
	if n := b.applier.numCalls(); n != 6 {
		t.Errorf("Applier called %d times, want 6", n)
	}
}

func TestWorkerOutOfOrderAndDuplicateDeliveries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.newWorker(t, &fakeReader{}, "w1")
	late := whEvent("contact.propertyChange", 5, t0+200, prop("firstname", "Newest"))
	early := whEvent("contact.propertyChange", 5, t0+100, prop("firstname", "Older"))
	clear := whEvent("contact.propertyChange", 5, t0+150, prop("phone", ""))
	phone := whEvent("contact.propertyChange", 5, t0+50, prop("phone", "555"))

	// The newest change arrives first and is applied.
	b.deliverEvents(t, late)
	drain(t, w)
	// Then an older one, a duplicate of the newest, and a phone set/clear pair
	// delivered in reverse order.
	b.deliverEvents(t, early, late, clear)
	late.AttemptNumber = 3
	b.deliverEvents(t, late, phone)
	drain(t, w)

	rec, ok := b.applier.record("contacts", "5")
	if !ok || rec.Fields["first_name"] != "Newest" {
		t.Fatalf("first_name = %v, want Newest (record %+v)", rec.Fields["first_name"], rec)
	}
	if _, ok := rec.Fields["phone"]; ok {
		t.Fatalf("phone = %v; the clear at t+150 is newer than the set at t+50", rec.Fields["phone"])
	}
	if n := b.count(t); n != 4 {
		t.Errorf("%d rows for 4 distinct changes", n)
	}
	if got := b.statusCounts(t); got["processed"] != 4 {
		t.Errorf("statuses %v", got)
	}
}

func TestWorkerSkipsEchoes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var outcomes []string
	var mu sync.Mutex
	w := b.newWorker(t, &fakeReader{}, "w1", func(c *WorkerConfig) {
		c.Hooks.OnOutcome = func(o, _ string) { mu.Lock(); outcomes = append(outcomes, o); mu.Unlock() }
	})
	// A receiver that does not know the app id: the worker still recognises the echo.
	plain, err := NewReceiver(ReceiverConfig{Store: b.store.Inbound(), ClientSecret: testSecret, PublicURL: testPublicURL, Now: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	b.receiver = plain
	echo := func(ev *hubspot.WebhookEvent) { ev.ChangeSource, ev.SourceID = "INTEGRATION", testAppID }
	b.deliverEvents(t,
		whEvent("contact.propertyChange", 8, t0, prop("firstname", "Ours"), echo),
		whEvent("contact.creation", 9, t0, echo),
	)
	drain(t, w)
	if n := b.applier.numCalls(); n != 0 {
		t.Fatalf("echoes applied %d times", n)
	}
	if got := b.statusCounts(t); got["processed"] != 2 {
		t.Fatalf("statuses %v; echoes must be completed and kept", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(outcomes, ",") != "echo,echo" {
		t.Errorf("outcomes %v", outcomes)
	}
}

func TestWorkerCreationLinksByEmail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	localID := b.applier.insertLocal(map[string]any{"email": "pushed@example.com", "first_name": "Local"})
	reader := &fakeReader{objects: map[string]hubspot.Object{"77": contactObj("77", "pushed@example.com", "Remote", time.UnixMilli(t0))}}
	w := b.newWorker(t, reader, "w1")
	b.deliverEvents(t, whEvent("contact.creation", 77, t0))
	drain(t, w)
	rec, ok := b.applier.record("contacts", "77")
	if !ok || rec.ID != localID {
		t.Fatalf("creation made %+v, want the local record %s linked", rec, localID)
	}
	if n := b.applier.numRecords(); n != 1 {
		t.Fatalf("%d records, want 1 (no duplicate)", n)
	}
	if rec.Fields["first_name"] != "Remote" {
		t.Errorf("first_name %v", rec.Fields["first_name"])
	}
}

// TestWorkerUnlinkedEditFindsCreator: a company hubsync created whose link is
// not recorded yet (the create's answer was lost) is edited in HubSpot. The
// worker reads the whole object, id property included (hubsync_record_id is
// no mapped field), and links it to the record that created it instead of
// making a second record of the changed property.
func TestWorkerUnlinkedEditFindsCreator(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.applier.guardPartial = true
	localID := b.applier.insertLocal(map[string]any{"name": "Acme", "city": "Oslo"})
	reader := &fakeReader{objects: map[string]hubspot.Object{"1004": {ID: "1004", UpdatedAt: time.UnixMilli(t0 + 5), Properties: map[string]string{
		"name": "Acme Corp", "city": "Oslo", "domain": "", "industry": "", "numberofemployees": "",
		mapping.RecordIDProperty: localID,
	}}}}
	w := b.newWorker(t, reader, "w1")
	b.deliverEvents(t, whEvent("company.propertyChange", 1004, t0+5, prop("name", "Acme Corp")))
	drain(t, w)
	rec, ok := b.applier.record("companies", "1004")
	if !ok || rec.ID != localID {
		t.Fatalf("the edit made %+v, want the local record %s linked", rec, localID)
	}
	if n := b.applier.numRecords(); n != 1 {
		t.Fatalf("%d records, want 1 (no duplicate)", n)
	}
	if rec.Fields["name"] != "Acme Corp" {
		t.Errorf("name %v, want HubSpot's edit", rec.Fields["name"])
	}
}

func TestWorkerCreationOfVanishedObject(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reader := &fakeReader{objects: map[string]hubspot.Object{}}
	w := b.newWorker(t, reader, "w1")
	b.deliverEvents(t, whEvent("contact.creation", 404, t0))
	drain(t, w)
	reader.err = &hubspot.Error{StatusCode: 404, Kind: hubspot.KindNotFound}
	b.deliverEvents(t, whEvent("contact.restore", 405, t0))
	drain(t, w)
	if got := b.statusCounts(t); got["processed"] != 2 {
		t.Fatalf("statuses %v, want both completed as ignored", got)
	}
	if n := b.applier.numCalls(); n != 0 {
		t.Fatalf("Applier called %d times", n)
	}
}

func TestWorkerBatchesReadsAndCountsBudget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reader := &fakeReader{objects: map[string]hubspot.Object{}}
	var evs []hubspot.WebhookEvent
	for i := range 150 {
		id := strconv.Itoa(i + 1)
		reader.objects[id] = contactObj(id, "c"+id+"@example.com", "C"+id, time.UnixMilli(t0))
		evs = append(evs, whEvent("contact.creation", int64(i+1), t0))
	}
	b.deliverEvents(t, evs[:100]...)
	b.deliverEvents(t, evs[100:]...)
	bud := &fakeBudget{left: 1000}
	w := b.newWorker(t, reader, "w1", func(c *WorkerConfig) { c.Budget = bud; c.BatchSize = 200 })
	drain(t, w)
	if reader.maxIDs > hubspot.MaxBatchInputs {
		t.Errorf("a BatchRead carried %d ids", reader.maxIDs)
	}
	if reader.calls != 2 || bud.reserved != 2 {
		t.Errorf("%d reads, %d tokens reserved; want 2 and 2", reader.calls, bud.reserved)
	}
	if n := b.applier.numRecords(); n != 150 {
		t.Errorf("%d records, want 150", n)
	}
}

func TestWorkerNoBudgetReleases(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reader := &fakeReader{objects: map[string]hubspot.Object{"1": contactObj("1", "a@example.com", "A", time.UnixMilli(t0))}}
	bud := &fakeBudget{left: 0, retryAfter: 30 * time.Second}
	w := b.newWorker(t, reader, "w1", func(c *WorkerConfig) { c.Budget = bud })
	b.deliverEvents(t, whEvent("contact.creation", 1, t0))
	if n, err := w.RunOnce(context.Background()); n != 1 || err != nil {
		t.Fatalf("RunOnce = %d, %v", n, err)
	}
	ev := testcheck.Index(t, "the inbound events", b.all(t), 0)
	if ev.Status != store.StatusPending || ev.RetryCount != 0 || reader.calls != 0 {
		t.Fatalf("after a refused reservation: status %s retries %d reads %d; want pending, 0, 0", ev.Status, ev.RetryCount, reader.calls)
	}
	if n, _ := w.RunOnce(context.Background()); n != 0 {
		t.Fatal("released event claimable before the budget's RetryAfter")
	}
	b.clock.Advance(31 * time.Second)
	bud.mu.Lock()
	bud.left = 1
	bud.mu.Unlock()
	drain(t, w)
	if _, ok := b.applier.record("contacts", "1"); !ok {
		t.Fatal("contact not created once budget was available")
	}
}

func TestWorkerHubSpotRateLimitRetriesAfter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reader := &fakeReader{err: &hubspot.Error{StatusCode: 429, Kind: hubspot.KindRateLimited, PolicyName: "TEN_SECONDLY_ROLLING", RetryAfter: 10 * time.Minute}}
	bud := &fakeBudget{left: 10}
	w := b.newWorker(t, reader, "w1", func(c *WorkerConfig) { c.Budget = bud })
	b.deliverEvents(t, whEvent("contact.creation", 1, t0))
	drain(t, w)
	ev := testcheck.Index(t, "the inbound events", b.all(t), 0)
	if ev.Status != store.StatusPending || ev.RetryCount != 1 {
		t.Fatalf("status %s retries %d, want pending 1", ev.Status, ev.RetryCount)
	}
	if wait := ev.NextAttemptDate.Sub(b.clock.Now()); wait < 10*time.Minute {
		t.Errorf("next attempt in %s, want at least HubSpot's 10m", wait)
	}
	// The budget learns of the 429 from the client's response hook, not from
	// the worker: see TestWorkerReadCalibratesBudgetThroughClientHook.
}

func TestWorkerRetryThenDeadLetter(t *testing.T) {
	t.Parallel()
	b := setup(t) // MaxAttempts 3, no jitter
	b.applier.fail = func(apply.Change) error { return errors.New("database is on fire") }
	w := b.newWorker(t, &fakeReader{}, "w1")
	b.deliverEvents(t, whEvent("contact.propertyChange", 1, t0, prop("firstname", "X")))
	for i := 1; i <= 3; i++ {
		if n, err := w.RunOnce(context.Background()); n != 1 || err != nil {
			t.Fatalf("attempt %d: RunOnce = %d, %v", i, n, err)
		}
		b.clock.Advance(time.Hour)
	}
	dead, err := b.store.Inbound().DeadLetters(context.Background(), store.DeadLetterFilter{Key: "hubspot"})
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || !strings.Contains(dead[0].ErrorMessage, "database is on fire") || dead[0].RetryCount != 3 {
		t.Fatalf("dead letters %+v", dead)
	}
	// Re-queued once the cause is fixed, it goes through.
	b.applier.fail = nil
	if _, err := b.store.Inbound().Requeue(context.Background(), dead[0].ID); err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	if rec, _ := b.applier.record("contacts", "1"); rec.Fields["first_name"] != "X" {
		t.Fatalf("requeued event not applied: %+v", rec)
	}
}

func TestWorkerPermanentErrorsDeadLetterAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.applier.fail = func(ch apply.Change) error {
		if ch.ExternalID == "1" {
			return fmt.Errorf("email is not valid: %w", apply.ErrPermanent)
		}
		return nil
	}
	w := b.newWorker(t, &fakeReader{}, "w1")
	b.deliverEvents(t,
		whEvent("contact.propertyChange", 1, t0, prop("email", "nope")),
		whEvent("deal.propertyChange", 2, t0, prop("amount", "not-a-number")),
		whEvent("deal.propertyChange", 3, t0, prop("amount", "12.5")),
	)
	drain(t, w)
	dead, err := b.store.Inbound().DeadLetters(context.Background(), store.DeadLetterFilter{Key: "hubspot"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := map[string]string{}
	for _, d := range dead {
		msgs[d.ExternalID] = d.ErrorMessage
	}
	if len(dead) != 2 || !strings.Contains(msgs["1"], "email is not valid") || !strings.Contains(msgs["2"], "not a number") {
		t.Fatalf("dead letters %v", msgs)
	}
	if rec, _ := b.applier.record("deals", "3"); rec.Fields["amount"] != 12.5 {
		t.Fatalf("deal 3 amount %v", rec.Fields["amount"])
	}
}

// TestWorkerKilledBetweenClaimAndComplete: a worker claims and dies; once its
// lease expires on the store's clock another worker completes the event, and
// the dead worker's late completion is fenced off.
func TestWorkerKilledBetweenClaimAndComplete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.deliverEvents(t, whEvent("contact.propertyChange", 1, t0, prop("firstname", "Survivor")))
	ctx := context.Background()
	claimed, err := b.store.Inbound().Claim(ctx, store.ClaimParams{Key: "hubspot", Owner: "doomed", LeaseDuration: time.Minute})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %d", err, len(claimed))
	}
	// The doomed worker is gone. While its lease lives, nobody else gets the event.
	w := b.newWorker(t, &fakeReader{}, "rescuer")
	if n, err := w.RunOnce(ctx); n != 0 || err != nil {
		t.Fatalf("event claimable under a live lease: %d, %v", n, err)
	}
	b.clock.Advance(time.Minute + time.Second)
	if n, err := w.RunOnce(ctx); n != 1 || err != nil {
		t.Fatalf("after the lease: RunOnce = %d, %v", n, err)
	}
	if rec, _ := b.applier.record("contacts", "1"); rec.Fields["first_name"] != "Survivor" {
		t.Fatalf("record %+v", rec)
	}
	if err := b.store.Inbound().Complete(ctx, claimed[0].Lease()); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("doomed worker's completion: %v, want ErrLeaseLost", err)
	}
	if got := b.statusCounts(t); got["processed"] != 1 {
		t.Fatalf("statuses %v", got)
	}
}

// blockingApplier blocks every Apply until release is closed or its context ends.
type blockingApplier struct {
	inner   apply.Applier
	entered chan struct{}
	release chan struct{}
}

func (a *blockingApplier) Apply(ctx context.Context, ch apply.Change) (apply.Result, error) {
	select {
	case a.entered <- struct{}{}:
	default:
	}
	select {
	case <-a.release:
		return a.inner.Apply(ctx, ch)
	case <-ctx.Done():
		return apply.Result{}, ctx.Err()
	}
}

func TestWorkerServiceNotifyAndGracefulStop(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ba := &blockingApplier{inner: b.applier, entered: make(chan struct{}, 1), release: make(chan struct{})}
	w := b.newWorker(t, &fakeReader{}, "svc", func(c *WorkerConfig) { c.Applier = ba; c.PollInterval = time.Hour })
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.deliverEvents(t, whEvent("contact.propertyChange", 1, t0, prop("firstname", "Graceful")))
	w.Notify() // the poll interval is an hour: only Notify can wake it
	testwait.Recv(t, "the applier to be entered", ba.entered)
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	close(ba.release) // the in-flight event finishes
	if err := testwait.Recv(t, "Stop to return", stopped); err != nil {
		t.Fatal(err)
	}
	if got := b.statusCounts(t); got["processed"] != 1 {
		t.Fatalf("statuses %v; a graceful stop finishes the cycle in flight", got)
	}
	if err := w.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := w.Start(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Start after Stop: %v", err)
	}
}

func TestWorkerHardStopReleases(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ba := &blockingApplier{inner: b.applier, entered: make(chan struct{}, 1), release: make(chan struct{})}
	w := b.newWorker(t, &fakeReader{}, "svc", func(c *WorkerConfig) { c.Applier = ba; c.PollInterval = time.Hour })
	b.deliverEvents(t, whEvent("contact.propertyChange", 1, t0, prop("firstname", "Never")))
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, "the applier to be entered", ba.entered)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no patience: a hard stop
	if err := w.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop = %v, want context.Canceled", err)
	}
	ev := testcheck.Index(t, "the inbound events", b.all(t), 0)
	if ev.Status != store.StatusPending || ev.RetryCount != 0 {
		t.Fatalf("after a hard stop: status %s retries %d; want the lease released without a failure", ev.Status, ev.RetryCount)
	}
	// Another worker picks it up at once.
	w2 := b.newWorker(t, &fakeReader{}, "next")
	drain(t, w2)
	if rec, _ := b.applier.record("contacts", "1"); rec.Fields["first_name"] != "Never" {
		t.Fatalf("record %+v", rec)
	}
}

func TestWorkerConfigValidation(t *testing.T) {
	t.Parallel()
	_, err := NewWorker(WorkerConfig{})
	if err == nil || !strings.Contains(err.Error(), "Store") || !strings.Contains(err.Error(), "Applier") || !strings.Contains(err.Error(), "HubSpot") {
		t.Fatalf("err = %v", err)
	}
	_, err = NewReceiver(ReceiverConfig{PublicURL: "crm.example.com"})
	if err == nil || !strings.Contains(err.Error(), "ClientSecret") || !strings.Contains(err.Error(), "PublicURL") {
		t.Fatalf("err = %v", err)
	}
}

// A creation that cannot be read (no budget) holds back the record's later
// events of the same claim: an update must not run ahead and create a bare record.
func TestWorkerHeldCreationHoldsItsRecord(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reader := &fakeReader{objects: map[string]hubspot.Object{"1": contactObj("1", "a@example.com", "A", time.UnixMilli(t0))}}
	bud := &fakeBudget{left: 0, retryAfter: 30 * time.Second}
	w := b.newWorker(t, reader, "w1", func(c *WorkerConfig) { c.Budget = bud })
	b.deliverEvents(t,
		whEvent("contact.creation", 1, t0),
		whEvent("contact.propertyChange", 1, t0+10, prop("lastname", "Lovelace")),
	)
	if n, err := w.RunOnce(context.Background()); n != 2 || err != nil {
		t.Fatalf("RunOnce = %d, %v; want both events of the record claimed together", n, err)
	}
	if _, ok := b.applier.record("contacts", "1"); ok {
		t.Fatal("the update was applied while its record's creation was held back")
	}
	for _, ev := range b.all(t) {
		if ev.Status != store.StatusPending || ev.RetryCount != 0 {
			t.Fatalf("event %s (%s): status %s retries %d; want pending with no attempt used", ev.ID, ev.EventType, ev.Status, ev.RetryCount)
		}
	}
	b.clock.Advance(31 * time.Second)
	bud.mu.Lock()
	bud.left = 10
	bud.mu.Unlock()
	drain(t, w)
	rec, ok := b.applier.record("contacts", "1")
	if !ok || rec.Fields["email"] != "a@example.com" || rec.Fields["last_name"] != "Lovelace" {
		t.Fatalf("contact 1 = %+v, %v; want created from HubSpot, then updated", rec, ok)
	}
}

// A 404 for a whole read of several ids means the object type is wrong, not
// that every object was deleted: the creations are retried, not dropped.
func TestWorkerWholeCall404IsRetried(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reader := &fakeReader{err: &hubspot.Error{StatusCode: 404, Kind: hubspot.KindNotFound, Message: "unknown object type"}}
	w := b.newWorker(t, reader, "w1")
	b.deliverEvents(t, whEvent("contact.creation", 1, t0), whEvent("contact.creation", 2, t0))
	if _, err := w.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, ev := range b.all(t) {
		if ev.Status != store.StatusPending || ev.RetryCount != 1 {
			t.Fatalf("event %s: status %s retries %d; want pending, retried once", ev.ID, ev.Status, ev.RetryCount)
		}
	}
}

// TestWorkerMergeReadsSurvivor: a merge that moved properties reads the
// survivor under the budget and carries its mapped values, at the merge's
// occurredAt; one that moved none reads nothing; a survivor that is gone (a
// single-id 404) still lets the merge re-point its records.
func TestWorkerMergeReadsSurvivor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ada := contactObj("1", "ada@example.com", "Ada", time.UnixMilli(t0+500))
	ada.Properties[hubspot.AdditionalEmailsProperty] = "ann@example.com; ;bob@example.com"
	ada.Properties[hubspot.MergedObjectIDsProperty] = "3;2"
	reader := &fakeReader{objects: map[string]hubspot.Object{"1": ada}}
	bud := &fakeBudget{left: 10}
	w := b.newWorker(t, reader, "w1", func(c *WorkerConfig) { c.Budget = bud })
	merge := func(survivor, merged int64, at int64, moved int) hubspot.WebhookEvent {
		return whEvent("contact.merge", survivor, at, func(ev *hubspot.WebhookEvent) {
			ev.PrimaryObjectID, ev.MergedObjectIDs, ev.NewObjectID, ev.NumberOfPropertiesMoved = survivor, []int64{merged}, survivor, moved
		})
	}
	b.deliverEvents(t, merge(1, 3, t0+30, 2), merge(7, 8, t0+40, 0), merge(9, 10, t0+50, 1))
	drain(t, w)
	if got := b.statusCounts(t); got["processed"] != 3 {
		t.Fatalf("statuses %v, want 3 processed", got)
	}
	if reader.calls != 1 || bud.reserved != 1 {
		t.Fatalf("%d BatchRead calls, %d budget tokens; want one read (ids 1 and 9) under one token", reader.calls, bud.reserved)
	}
	b.applier.mu.Lock()
	calls := slices.Clone(b.applier.calls)
	b.applier.mu.Unlock()
	byExt := map[string]apply.Change{}
	for _, ch := range calls {
		byExt[ch.ExternalID] = ch
	}
	if ch := byExt["1"]; ch.Kind != store.EventMerge || ch.Fields["first_name"] != "Ada" || !ch.OccurredAt.Equal(time.UnixMilli(t0+30)) {
		t.Errorf("merge into 1 = %+v; want Ada's fields at the merge's time", ch)
	}
	// Matched by its id property, so that a survivor whose link is not
	// recorded yet finds its record (apply TestMergeIntoAnUnlinkedSurvivor).
	if ch := byExt["1"]; ch.MatchField != "email" || ch.MatchValue != "ada@example.com" {
		t.Errorf("merge into 1 matches %q = %q; want email = ada@example.com", ch.MatchField, ch.MatchValue)
	}
	// And it carries the emails the survivor keeps from the merged contacts,
	// which find a merged-away contact's record whose link is unrecorded
	// (apply TestMergeAwayOfAnUnlinkedObject).
	if ch := byExt["1"]; !slices.Equal(ch.MergedMatchValues, []string{"ann@example.com", "bob@example.com"}) {
		t.Errorf("merge into 1 carries merged emails %q; want ann@ and bob@example.com", ch.MergedMatchValues)
	}
	// And the ids the survivor lists as merged into it, 2 merged into 3
	// before (apply TestMergeChainOfUnrecordedCreates in records).
	if ch := byExt["1"]; !slices.Equal(ch.SurvivorMergedIDs, []string{"3", "2"}) {
		t.Errorf("merge into 1 carries the survivor's merged ids %q; want 3 and 2", ch.SurvivorMergedIDs)
	}
	if ch, ok := byExt["7"]; !ok || len(ch.Fields) != 0 {
		t.Errorf("merge into 7 (nothing moved) = %+v, %v; want applied without fields", ch, ok)
	}
	if ch, ok := byExt["9"]; !ok || ch.Kind != store.EventMerge || len(ch.Fields) != 0 {
		t.Errorf("merge into 9 (survivor not found) = %+v, %v; want applied without fields", ch, ok)
	}
}

// fullWindow returns a budget of one call per window whose call someone else
// spent: its room frees 10 s later, 300 ms (plus the call lead and bucket)
// after the fake clock's now, so a read books it.
func (b *bundle) fullWindow(t *testing.T) *budget.Memory {
	t.Helper()
	bud, err := budget.NewMemory(budget.Config{Limit: 1, Now: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := bud.Reserve(context.Background(), BudgetKeyDefault, 1); err != nil || !res.Granted {
		t.Fatalf("reserve: %+v %v", res, err)
	}
	b.clock.Advance(10*time.Second - 300*time.Millisecond)
	return bud
}

// TestWorkerBooksReadWhenWindowIsFull: a creation read that finds the
// budget's window full, with room freeing within WorkerConfig.BudgetAhead,
// books that room and reads then, keeping its event; with BudgetAhead
// negative the event is released, as before.
func TestWorkerBooksReadWhenWindowIsFull(t *testing.T) {
	t.Parallel()
	for _, book := range []bool{true, false} {
		t.Run(map[bool]string{true: "booked", false: "released"}[book], func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			reader := &fakeReader{objects: map[string]hubspot.Object{"1": contactObj("1", "a@example.com", "A", time.UnixMilli(t0))}}
			bud := b.fullWindow(t)
			w := b.newWorker(t, reader, "w1", func(c *WorkerConfig) {
				c.Budget = bud
				if !book {
					c.BudgetAhead = -1
				}
			})
			b.deliverEvents(t, whEvent("contact.creation", 1, t0))
			// The fake clock stands still: the real time waited is the
			// booked instant's distance.
			started := time.Now()
			if n, err := w.RunOnce(context.Background()); n != 1 || err != nil {
				t.Fatalf("RunOnce = %d, %v", n, err)
			}
			waited := time.Since(started)
			if !book {
				ev := testcheck.Index(t, "the inbound events", b.all(t), 0)
				if ev.Status != store.StatusPending || reader.calls != 0 {
					t.Fatalf("with BudgetAhead < 0: status %s, %d reads; want the event released unread", ev.Status, reader.calls)
				}
				return
			}
			if _, ok := b.applier.record("contacts", "1"); !ok || reader.calls != 1 {
				t.Fatalf("booked read: record applied %v, %d reads; want the contact created by one read", ok, reader.calls)
			}
			if waited < 300*time.Millisecond {
				t.Fatalf("the read came after %s; the room it booked frees only after 300ms", waited)
			}
		})
	}
}

// A creation's read is made under its grant (budget.WithCall): its answer,
// fed to the budget by the client's hook, counts the read from then, so its
// room frees after Window plus a bucket rather than Window + CallLead.
func TestWorkerReadIsCountedFromItsAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bud, err := budget.NewMemory(budget.Config{Limit: 1, RetrySpread: -1, Now: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	hook := budget.ObserveHubSpot(bud, BudgetKeyDefault, nil)
	reader := &fakeReader{
		objects:  map[string]hubspot.Object{"1": contactObj("1", "a@example.com", "A", time.UnixMilli(t0))},
		answered: func(ctx context.Context) { hook(ctx, hubspot.Response{StatusCode: 200}) },
	}
	w := b.newWorker(t, reader, "w1", func(c *WorkerConfig) { c.Budget = bud })
	b.deliverEvents(t, whEvent("contact.creation", 1, t0))
	if n, err := w.RunOnce(context.Background()); n != 1 || err != nil || reader.calls != 1 {
		t.Fatalf("RunOnce = %d, %v with %d reads; want the creation read once", n, err, reader.calls)
	}
	b.clock.Advance(budget.WindowDefault + budget.WindowDefault/100)
	if r, err := bud.Reserve(context.Background(), BudgetKeyDefault, 1); err != nil || !r.Granted {
		t.Fatalf("a window and a bucket after the read: Reserve = %+v, %v; want its room free (the read counted from its answer)", r, err)
	}
}

// pauseAfterBooking answers some other call 429 right after each booking
// ahead, while the booked read waits for its instant.
type pauseAfterBooking struct{ budget.Scheduler }

func (p pauseAfterBooking) Schedule(ctx context.Context, key string, tokens int, within time.Duration) (budget.Reservation, error) {
	r, err := p.Scheduler.Schedule(ctx, key, tokens, within)
	if err == nil && r.Wait > 0 {
		err = p.Observe(ctx, key, budget.Observation{RateLimited: true, Policy: budget.PolicyTenSecondlyRolling, RetryAfter: 30 * time.Second})
	}
	return r, err
}

// A read booked ahead is not made if HubSpot answered a 429 while it waited
// for its instant: its events are released until the pause ends.
func TestWorkerBookedReadWaitsOutAPause(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reader := &fakeReader{objects: map[string]hubspot.Object{"1": contactObj("1", "a@example.com", "A", time.UnixMilli(t0))}}
	w := b.newWorker(t, reader, "w1", func(c *WorkerConfig) { c.Budget = pauseAfterBooking{b.fullWindow(t)} })
	b.deliverEvents(t, whEvent("contact.creation", 1, t0))
	if _, err := w.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	ev := testcheck.Index(t, "the inbound events", b.all(t), 0)
	if reader.calls != 0 || ev.Status != store.StatusPending {
		t.Fatalf("under a pause: %d reads, event %s; want no read and the event released", reader.calls, ev.Status)
	}
}

// TestWorkerAppliesByItsOwnMapping: a receiver with the default mapping
// stores contact events as "contacts"; a worker whose mapping calls
// HubSpot's contacts "people" applies them as people (the HubSpot object is
// what the event is about), instead of completing them as unmapped.
func TestWorkerAppliesByItsOwnMapping(t *testing.T) {
	t.Parallel()
	b := setup(t)
	people, err := mapping.Parse([]byte("objects:\n  people:\n    hubspot_type: contacts\n    webhook_name: contact\n    id_property: email\n    id_field: email\n    fields:\n      email: email\n      given: firstname\n"))
	if err != nil {
		t.Fatal(err)
	}
	reader := &fakeReader{objects: map[string]hubspot.Object{"1": contactObj("1", "ada@example.com", "Ada", time.UnixMilli(t0))}}
	w := b.newWorker(t, reader, "w1", func(c *WorkerConfig) { c.Mapping = people })
	b.deliverEvents(t,
		whEvent("contact.creation", 1, t0),
		whEvent("contact.propertyChange", 1, t0+10, prop("firstname", "Grace")),
		whEvent("ticket.creation", 1, t0+13),
	)
	drain(t, w)
	if got := b.statusCounts(t); got["processed"] != 3 {
		t.Fatalf("statuses %v, want 3 processed", got)
	}
	ada, ok := b.applier.record("people", "1")
	if !ok || ada.Fields["given"] != "Grace" || ada.Fields["email"] != "ada@example.com" {
		t.Fatalf("people 1 = %+v, %v; want the creation and the edit applied as people", ada, ok)
	}
	if _, ok := b.applier.record("contacts", "1"); ok {
		t.Fatal("applied as contacts, which the worker's mapping does not have")
	}
	if n := b.applier.numCalls(); n != 2 {
		t.Errorf("Applier called %d times, want 2 (the ticket is unmapped)", n)
	}
}
