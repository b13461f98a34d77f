package inbound

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/eventtrace"
	"github.com/hubsync/hubsync/internal/leasekeep"
	"github.com/hubsync/hubsync/internal/service"
	"github.com/hubsync/hubsync/internal/startstop"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

// Defaults of WorkerConfig.
const (
	// LeaseDurationDefault is how long a claim holds its events without a
	// heartbeat; while a cycle runs, heartbeats extend it every third of it.
	// It is how long a crashed replica's events wait, so it is short: 15 s
	// keeps that well within 30 s (issue 16). A late HubSpot read needs no
	// longer lease: what it returns is applied in a transaction fenced by the
	// lease (CompleteTx).
	LeaseDurationDefault = 15 * time.Second
	// BatchSizeDefault is how many events one cycle claims.
	BatchSizeDefault = 100
	// BudgetAheadDefault is how far ahead a read may be booked
	// (WorkerConfig.BudgetAhead).
	BudgetAheadDefault = 2 * time.Second
	// BudgetAheadMax bounds WorkerConfig.BudgetAhead.
	BudgetAheadMax = 10 * time.Second
	// PollIntervalDefault is how long an idle worker waits before claiming again
	// (Notify wakes it earlier).
	PollIntervalDefault = time.Second
	// ApplyConcurrencyDefault is how many records a cycle applies at once
	// (WorkerConfig.ApplyConcurrency). An apply is one transaction whose time
	// goes to round trips and its commit, not to the worker's CPU: under load
	// one took 45-70 ms on PostgreSQL, so a cycle of 700 events spent most of a
	// minute applying one after another. With four in flight a cycle's applies
	// take at best a quarter of that, while holding only 4 of the pool's 20
	// connections (pgstore, mysqlstore), leaving the rest to the receiver, the
	// outbound worker, the API and the lease heartbeat.
	ApplyConcurrencyDefault = 4
	// ApplyConcurrencyMax bounds WorkerConfig.ApplyConcurrency: past the
	// connection pool, more applies only wait for a connection.
	ApplyConcurrencyMax = 32
	// BudgetKeyDefault is the budget key HubSpot calls are counted against.
	BudgetKeyDefault = "hubspot"
	// cleanupTimeout bounds the releases and completions a cancelled cycle
	// still makes, so that no lease waits for its expiry needlessly.
	cleanupTimeout = 10 * time.Second
)

// Outcomes reported to WorkerHooks.OnOutcome, one per event.
const (
	OutcomeApplied   = "applied"    // the Applier applied it (its Result may list stale fields)
	OutcomeStale     = "stale"      // the Applier skipped it all: a newer change was applied
	OutcomeIgnored   = "ignored"    // completed without applying (unmapped, association, gone)
	OutcomeEcho      = "echo"       // our own write coming back, stored pending (see the package doc); completed without applying
	OutcomeRetry     = "retry"      // failed, will be retried
	OutcomeDead      = "dead"       // failed for good (dead letter)
	OutcomeReleased  = "released"   // given back without a failure (no budget, stopping)
	OutcomeLeaseLost = "lease_lost" // another worker took it over
)

// ObjectReader reads HubSpot objects in batches; *hubspot.Client satisfies it.
type ObjectReader interface {
	BatchRead(ctx context.Context, t hubspot.ObjectType, ids []string, properties []string, idProperty string) (*hubspot.BatchResult, error)
}

var _ ObjectReader = (*hubspot.Client)(nil)

// WorkerHooks are optional metrics callbacks; they must be quick and safe for
// concurrent use.
type WorkerHooks struct {
	// OnOutcome is called once per handled event with one of the Outcome* values.
	OnOutcome func(outcome, eventType string)
}

// WorkerConfig configures a Worker. Zero fields take their defaults.
type WorkerConfig struct {
	// Store is the inbound queue (required).
	Store store.InboundRepository
	// Applier writes changes to the application's records (required). When it
	// is an apply.FencedApplier on the queue's database (records.Service is),
	// each event is applied and completed in one transaction that first checks
	// the event's lease, so a worker whose lease was lost changes nothing.
	Applier apply.Applier
	// HubSpot reads the objects that creation and restore events name (required).
	HubSpot ObjectReader
	// Budget is the shared HubSpot call budget; nil means unlimited.
	Budget budget.Budget
	// BudgetKey is the key reads are counted against; default BudgetKeyDefault.
	BudgetKey string
	// BudgetAhead is how far ahead a read may be booked when the budget's
	// window is full, if Budget is a budget.Scheduler (NewMemory and NewSQL
	// are): the cycle keeps its events, waits for the booked instant and
	// reads then, instead of releasing them. The outbound worker books ahead
	// too; a worker that only asked for room now would find every room that
	// frees already booked while the outbound worker is budget-bound. Default
	// BudgetAheadDefault, at most BudgetAheadMax; negative never books ahead.
	BudgetAhead time.Duration
	// Mapping maps HubSpot properties to local fields; default mapping.Default().
	Mapping *mapping.Set
	// Source is the inbound Source to claim, matched exactly; default "hubspot".
	Source string
	// AppID is this app's HubSpot id, to recognise echoes of our own writes.
	AppID string
	// BatchSize is how many events one cycle claims; default BatchSizeDefault.
	BatchSize int
	// ApplyConcurrency is how many records a cycle applies at once, each in
	// its own transaction; a record's events still apply one after another in
	// occurredAt order (the property changes of one HubSpot edit as one
	// change), and a cycle that holds a merge (which re-points other records)
	// applies all its events one at a time. 1 applies one event at a time.
	// On SQLite, which admits one writer, parallel applies only queue on
	// the write lock: use 1 there (hubsync serve does). On MySQL and MariaDB,
	// concurrent creations can deadlock on the links table's unique index
	// (InnoDB gap locks); records.Service runs the deadlock victim's
	// transaction again, so that costs no retry of the event (an Applier that
	// does not retry its transactions would cost one per deadlock). Default
	// ApplyConcurrencyDefault, at most ApplyConcurrencyMax.
	ApplyConcurrency int
	// LeaseDuration is how long a claim holds its events unless extended; a
	// heartbeat extends them every LeaseDuration/3 while the cycle runs (one
	// BatchRead per object type and the applies), so it is how long a crashed
	// replica's events wait. Default LeaseDurationDefault.
	LeaseDuration time.Duration
	// PollInterval is the idle wait between claims; default PollIntervalDefault.
	PollInterval time.Duration
	// Owner names this worker in lease rows; default "host/pid/inbound-random".
	Owner string
	// Now is the clock used to turn a retry's NextAttemptDate into a delay; pass
	// the store's clock. Default time.Now.
	Now func() time.Time
	// MaxEventSkew is how far ahead of Now an event's occurredAt may lie; a
	// stored event further ahead (or with an occurredAt that is not positive)
	// is dead-lettered with the reason, never applied: its time would win
	// every later change of its fields. Default MaxEventSkewDefault.
	MaxEventSkew time.Duration
	// Logger receives the worker's logs; default slog.Default().
	Logger *slog.Logger
	// Hooks are optional metrics callbacks.
	Hooks WorkerHooks
	// TracerProvider traces each cycle, and each event (in the event's own
	// trace, see internal/eventtrace, with its outcome) and its apply; nil
	// traces nothing.
	TracerProvider trace.TracerProvider
}

func (c WorkerConfig) withDefaults() WorkerConfig {
	c.BudgetKey = cmp.Or(c.BudgetKey, BudgetKeyDefault)
	if c.Mapping == nil {
		c.Mapping = mapping.Default()
	}
	c.Source = cmp.Or(c.Source, outbox.SyncSourceHubSpot)
	c.BatchSize = cmp.Or(c.BatchSize, BatchSizeDefault)
	c.ApplyConcurrency = cmp.Or(c.ApplyConcurrency, ApplyConcurrencyDefault)
	c.LeaseDuration = cmp.Or(c.LeaseDuration, LeaseDurationDefault)
	c.PollInterval = cmp.Or(c.PollInterval, PollIntervalDefault)
	c.BudgetAhead = cmp.Or(c.BudgetAhead, BudgetAheadDefault)
	c.MaxEventSkew = cmp.Or(c.MaxEventSkew, MaxEventSkewDefault)
	b := service.NewBase("inbound", service.Base{Logger: c.Logger, Now: c.Now, Owner: c.Owner})
	c.Logger, c.Now, c.Owner = b.Logger, b.Now, b.Owner
	return c
}

func (c WorkerConfig) validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("WorkerConfig.Store is nil; pass store.Store.Inbound()"))
	}
	if c.Applier == nil {
		errs = append(errs, errors.New("WorkerConfig.Applier is nil; pass the records service or your own apply.Applier"))
	}
	if c.HubSpot == nil {
		errs = append(errs, errors.New("WorkerConfig.HubSpot is nil; pass a *hubspot.Client (creation events need a read)"))
	}
	if c.BudgetAhead > BudgetAheadMax {
		errs = append(errs, fmt.Errorf("WorkerConfig.BudgetAhead is %s; use at most %s (a booked read's events wait that long), 0 for %s, or negative for never", c.BudgetAhead, BudgetAheadMax, BudgetAheadDefault))
	}
	if c.BatchSize < 0 || c.BatchSize > 1000 {
		errs = append(errs, fmt.Errorf("WorkerConfig.BatchSize is %d; use 1..1000 or 0 for %d", c.BatchSize, BatchSizeDefault))
	}
	if c.ApplyConcurrency < 0 || c.ApplyConcurrency > ApplyConcurrencyMax {
		errs = append(errs, fmt.Errorf("WorkerConfig.ApplyConcurrency is %d; use 1..%d (1 applies one event at a time), or 0 for %d", c.ApplyConcurrency, ApplyConcurrencyMax, ApplyConcurrencyDefault))
	}
	if c.LeaseDuration < 0 || (c.LeaseDuration > 0 && c.LeaseDuration < time.Second) {
		errs = append(errs, fmt.Errorf("WorkerConfig.LeaseDuration is %s; heartbeats run every third of it, so use at least 1s, or 0 for %s", c.LeaseDuration, LeaseDurationDefault))
	}
	if c.MaxEventSkew < 0 {
		errs = append(errs, fmt.Errorf("WorkerConfig.MaxEventSkew is %s; use a positive duration or 0 for %s", c.MaxEventSkew, MaxEventSkewDefault))
	}
	if c.PollInterval < 0 {
		errs = append(errs, fmt.Errorf("WorkerConfig.PollInterval is %s; use a positive duration or 0 for %s", c.PollInterval, PollIntervalDefault))
	}
	return errors.Join(errs...)
}

// Worker (the SyncWorker of the design) applies inbound HubSpot events to
// the application's records. It is a service: Start returns at once, Stop
// stops it gracefully. RunOnce runs one cycle, for tests and for callers that
// drive it themselves.
type Worker struct {
	cfg    WorkerConfig
	notify chan struct{}
	svc    startstop.Service
	// unfenced is set once the Applier answered ErrFenceUnsupported.
	unfenced atomic.Bool
	// mismatch warns once of an event stored under a type the mapping
	// does not have, but applied by its webhook name.
	mismatch sync.Once
	tracer   trace.Tracer
}

// NewWorker validates cfg and returns a Worker.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("inbound: %w", err)
	}
	return &Worker{cfg: cfg, notify: make(chan struct{}, 1), tracer: eventtrace.Tracer(cfg.TracerProvider)}, nil
}

// The lifecycle errors every hubsync service returns; they are the same
// values in every package (outbound.ErrStarted == inbound.ErrStarted).
var (
	// ErrStarted is returned by Start on a running worker.
	ErrStarted = startstop.ErrStarted
	// ErrStopped is returned by Start after Stop: a Worker runs once.
	ErrStopped = startstop.ErrStopped
)

// Start launches the worker's loop and returns at once; ErrStarted when it
// runs already, ErrStopped after Stop. Cancelling ctx stops the loop hard
// (in-flight events are released); Stop stops it gracefully.
func (w *Worker) Start(ctx context.Context) error { return w.svc.Start(ctx, w.run) }

// Stop asks the loop to stop after the cycle in flight and waits for it. If
// ctx ends first, the cycle is cancelled (its unfinished events are released,
// not failed) and Stop returns ctx's error once the loop has exited. Stop is
// idempotent and safe before Start.
func (w *Worker) Stop(ctx context.Context) error { return w.svc.Stop(ctx) }

// Done is closed once the worker has stopped.
func (w *Worker) Done() <-chan struct{} { return w.svc.Done() }

// Notify wakes the worker to claim at once (for example after the Receiver
// stored a delivery). It never blocks.
func (w *Worker) Notify() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

func (w *Worker) run(ctx context.Context, stop <-chan struct{}) {
	log := w.cfg.Logger.With("worker", w.cfg.Owner, "source", w.cfg.Source)
	log.Debug("inbound: worker started")
	defer log.Debug("inbound: worker stopped")
	for {
		select {
		case <-stop:
			return
		default:
		}
		n, err := w.RunOnce(ctx)
		if err != nil && !errors.Is(err, context.Canceled) {
			log.Error("inbound: sync cycle", "err", err)
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil && n > 0 {
			// More may be waiting: a claim takes at most BatchSize records, each
			// its head event with the followers already due, so the rest (and
			// whatever arrived meanwhile) becomes claimable only now.
			continue
		}
		if !service.Idle(ctx, stop, w.notify, w.cfg.PollInterval) {
			return
		}
	}
}

// task is one claimed event on its way through a cycle.
type task struct {
	ev     store.InboundEvent
	canon  Event
	obj    mapping.Object
	change apply.Change
	done   bool // resolved: completed, failed, retried or released
	// span is the event's own span (internal/eventtrace), ended with the cycle.
	span trace.Span
}

// cycle is the state of one RunOnce.
type cycle struct {
	w   *Worker
	log *slog.Logger
	// mu guards completes, errs and held, which the applies of different
	// records change at once (apply).
	mu        sync.Mutex
	completes []*task
	errs      []error
	// held are the records whose creation could not be read from HubSpot this
	// cycle (released or retried), with the delay before they are due again:
	// their later events wait with them, so a record never applies out of order.
	held map[recordKey]time.Duration
}

// recordKey names an inbound record: its object type and external id.
type recordKey struct{ objectType, id string }

func (t *task) key() recordKey { return recordKey{t.ev.ObjectType, t.ev.ExternalID} }

// hold marks the tasks' records as waiting for delay.
func (c *cycle) hold(tasks []*task, delay time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held == nil {
		c.held = map[recordKey]time.Duration{}
	}
	for _, t := range tasks {
		c.held[t.key()] = max(c.held[t.key()], delay)
	}
}

// heldFor reports whether k is held, and for how long.
func (c *cycle) heldFor(k recordKey) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.held[k]
	return d, ok
}

// RunOnce claims up to BatchSize events and handles them; it returns how
// many it claimed. Errors of individual events are recorded on the events
// (retry, dead letter); the returned error reports store failures. When ctx is
// cancelled, events not yet handled are released for another worker.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	evs, err := w.cfg.Store.Claim(ctx, store.ClaimParams{
		Key: w.cfg.Source, Limit: w.cfg.BatchSize, LeaseDuration: w.cfg.LeaseDuration, Owner: w.cfg.Owner,
	})
	if err != nil {
		return 0, fmt.Errorf("claim inbound: %w", err)
	}
	if len(evs) == 0 {
		return 0, nil
	}
	ctx, span := w.tracer.Start(ctx, "hubsync.inbound.cycle", trace.WithAttributes(attribute.Int("hubsync.events", len(evs))))
	defer span.End()
	// The lease runs from the start of the claim: the earliest expiry stamped.
	leases := make([]store.Lease, len(evs))
	expiry := w.cfg.Now().Add(w.cfg.LeaseDuration)
	for i, ev := range evs {
		leases[i] = ev.Lease()
		if ev.LeaseExpiresDate != nil && ev.LeaseExpiresDate.Before(expiry) {
			expiry = *ev.LeaseExpiresDate
		}
	}
	keep := leasekeep.Start(ctx, w.cfg.Store, leasekeep.Config{
		Leases: leases, Duration: w.cfg.LeaseDuration, Expiry: expiry,
		Now: w.cfg.Now, Logger: w.cfg.Logger,
	})
	defer keep.Stop()
	c := &cycle{w: w, log: w.cfg.Logger.With("worker", w.cfg.Owner)}
	tasks := make([]*task, len(evs))
	for i, ev := range evs {
		_, evSpan := eventtrace.Start(ctx, w.tracer, "hubsync.inbound.event", ev.ID,
			attribute.String("hubsync.object_type", ev.ObjectType), attribute.String("hubsync.event_type", ev.EventType))
		defer evSpan.End()
		tasks[i] = &task{ev: ev, span: evSpan}
	}

	var fetch []*task
	var ready []*task
	for _, t := range tasks {
		switch c.prepare(ctx, t) {
		case needsFetch:
			fetch = append(fetch, t)
		case readyToApply:
			ready = append(ready, t)
		}
	}
	ready = append(ready, c.fetch(ctx, fetch)...)
	ready = c.readDeleted(ctx, ready)
	c.apply(ctx, ready)
	c.finish(ctx, tasks)
	return len(evs), errors.Join(append([]error{ctx.Err()}, c.errs...)...)
}

type prepared int

const (
	resolved prepared = iota
	needsFetch
	readyToApply
)

// prepare decodes an event and decides what it needs.
func (c *cycle) prepare(ctx context.Context, t *task) prepared {
	if err := json.Unmarshal(t.ev.Payload, &t.canon); err != nil {
		c.fail(ctx, t, fmt.Sprintf("undecodable payload: %v", err))
		return resolved
	}
	if t.canon.Version != EventVersion {
		c.fail(ctx, t, fmt.Sprintf("payload version %d, this worker reads %d", t.canon.Version, EventVersion))
		return resolved
	}
	if msg, ok := checkOccurredAt(t.canon.OccurredAt, c.w.cfg.Now(), c.w.cfg.MaxEventSkew); !ok {
		c.fail(ctx, t, msg)
		return resolved
	}
	if t.canon.Echo || t.canon.IsEcho(c.w.cfg.AppID) {
		c.complete(t, OutcomeEcho)
		return resolved
	}
	obj, ok := c.w.cfg.Mapping.Lookup(t.ev.ObjectType)
	if !ok {
		if obj, ok = c.w.cfg.Mapping.ForWebhook(t.canon.SubscriptionType); ok {
			// The receiver resolved the local type with another mapping (or
			// the mapping renamed it since): this worker's mapping decides,
			// rather than dropping a change it maps.
			c.w.mismatch.Do(func() {
				c.log.Warn("inbound: an event was stored under an object type this worker does not map; it is applied as the worker's mapping says: give the Receiver and the Worker the same mapping",
					"stored_as", t.ev.ObjectType, "subscription_type", t.canon.SubscriptionType, "applied_as", obj.ObjectType)
			})
			t.ev.ObjectType = obj.ObjectType
		}
	}
	if !ok {
		c.complete(t, OutcomeIgnored)
		return resolved
	}
	t.obj = obj
	t.change = apply.Change{
		EventID:    t.ev.ID,
		Source:     c.w.cfg.Source,
		ObjectType: t.ev.ObjectType,
		ExternalID: t.ev.ExternalID,
		Kind:       t.ev.EventType,
		OccurredAt: t.canon.OccurredTime(),
	}
	switch t.ev.EventType {
	case store.EventCreate, store.EventRestore:
		return needsFetch
	case store.EventUpdate:
		f, ok := obj.LocalField(t.canon.PropertyName)
		if !ok || f.Direction == mapping.ToHubSpotOnly {
			c.complete(t, OutcomeIgnored)
			return resolved
		}
		fields, err := obj.FromHubSpot(map[string]string{t.canon.PropertyName: deref(t.canon.PropertyValue)})
		if err != nil {
			c.fail(ctx, t, err.Error())
			return resolved
		}
		t.change.Fields = fields
		t.change.Partial = true // see readWhole
		return readyToApply
	case store.EventMerge:
		survivor := cmp.Or(t.canon.NewObjectID, t.canon.PrimaryObjectID, t.canon.ObjectID)
		var merged []string
		for _, id := range append(slices.Clone(t.canon.MergedObjectIDs), t.canon.PrimaryObjectID, t.canon.ObjectID) {
			if id != "" && id != survivor && !slices.Contains(merged, id) {
				merged = append(merged, id)
			}
		}
		slices.Sort(merged)
		t.change.ExternalID = survivor
		t.change.MergedIDs = merged
		// HubSpot sends no propertyChange for the values the merge copied
		// into the survivor: read the survivor, and apply it with the merge.
		// Also when the merge moved none: a merged record re-pointed to a
		// survivor that had no record here must take the survivor's values,
		// not keep the merged object's.
		return needsFetch
	case store.EventDelete, store.EventPrivacyDelete:
		return readyToApply
	default: // association, other: audit only
		c.complete(t, OutcomeIgnored)
		return resolved
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// fetch reads the objects of creation and restore events, and the survivors
// of merges, from HubSpot, at most
// hubspot.MaxBatchInputs ids per call and one budget token per call, and
// returns the tasks ready to apply.
func (c *cycle) fetch(ctx context.Context, tasks []*task) []*task {
	types, byType := groupTasks(tasks, func(t *task) string { return t.obj.ObjectType })
	var ready []*task
	for _, typ := range types {
		ts := byType[typ]
		// A merge's survivor; else the event's object.
		ids, byID := groupTasks(ts, func(t *task) string { return t.change.ExternalID })
		for chunk := range slices.Chunk(ids, hubspot.MaxBatchInputs) {
			if ctx.Err() != nil {
				return ready // finish releases the rest
			}
			var chunkTasks []*task
			for _, id := range chunk {
				chunkTasks = append(chunkTasks, byID[id]...)
			}
			ready = append(ready, c.fetchChunk(ctx, ts[0].obj, chunk, byID, chunkTasks)...)
		}
	}
	return ready
}

// ArchivedReader is an ObjectReader that also reads deleted objects
// (hubspot.Client.BatchReadArchived).
type ArchivedReader interface {
	BatchReadArchived(ctx context.Context, t hubspot.ObjectType, ids []string, properties []string) (*hubspot.BatchResult, error)
}

// readDeleted gives the deletions among tasks of ids the Applier knows
// nothing of (apply.UnknownIDs: no link, no tombstone) the deleted object's
// id property value, read from HubSpot (ArchivedReader), at most
// hubspot.MaxBatchInputs ids per call and one budget token per call, as
// MatchField and MatchValue: the object may be one a local record created
// whose create's answer was lost, and the Applier finds that record by it
// (apply's deleteUnrecorded) before the create's retry makes the object
// again. Deletions of linked or tombstoned ids, and of object types with no
// id property, read nothing. It returns the tasks still ready to apply:
// those whose read could not be made are released or retried.
func (c *cycle) readDeleted(ctx context.Context, tasks []*task) []*task {
	uk, ok := c.w.cfg.Applier.(apply.UnknownIDs)
	ar, ok2 := c.w.cfg.HubSpot.(ArchivedReader)
	if !ok || !ok2 {
		return tasks
	}
	deletions := slices.DeleteFunc(slices.Clone(tasks), func(t *task) bool {
		return t.ev.EventType != store.EventDelete || t.obj.IDProperty == "" || t.change.MatchValue != ""
	})
	types, byType := groupTasks(deletions, func(t *task) string { return t.obj.ObjectType })
	dropped := map[*task]bool{}
	left := func() []*task {
		return slices.DeleteFunc(slices.Clone(tasks), func(t *task) bool { return dropped[t] })
	}
	for _, typ := range types {
		ts := byType[typ]
		ids, byID := groupTasks(ts, func(t *task) string { return t.change.ExternalID })
		unknown, err := uk.UnknownIDs(ctx, c.w.cfg.Source, typ, ids)
		if err != nil {
			if ctx.Err() != nil {
				return left() // finish releases the rest
			}
			for _, t := range ts {
				c.hold([]*task{t}, c.retry(ctx, t, fmt.Sprintf("look up the links of deleted %s: %v", typ, err), 0))
				dropped[t] = true
			}
			continue
		}
		for chunk := range slices.Chunk(unknown, hubspot.MaxBatchInputs) {
			var chunkTasks []*task
			for _, id := range chunk {
				chunkTasks = append(chunkTasks, byID[id]...)
			}
			if !c.readDeletedChunk(ctx, ar, ts[0].obj, chunk, byID, chunkTasks) {
				for _, t := range chunkTasks {
					dropped[t] = true
				}
			}
		}
	}
	return left()
}

// readDeletedChunk reads the deleted objects of ids for tasks and sets their
// match values; false when the tasks were released or retried instead.
func (c *cycle) readDeletedChunk(ctx context.Context, ar ArchivedReader, obj mapping.Object, ids []string, byID map[string][]*task, tasks []*task) bool {
	ctx, ok := c.reserveRead(ctx, tasks)
	if !ok {
		return false
	}
	result, err := ar.BatchReadArchived(ctx, hubspot.ObjectType(obj.HubSpotType), ids, []string{obj.IDProperty})
	if err != nil {
		if ctx.Err() != nil {
			return false // finish releases them
		}
		var delay time.Duration
		for _, t := range tasks {
			delay = max(delay, c.retry(ctx, t, fmt.Sprintf("read deleted %s from HubSpot: %v", obj.HubSpotType, err), hubspot.RetryAfterOf(err)))
		}
		c.hold(tasks, delay)
		return false
	}
	for _, id := range ids {
		o := result.ResultByID(id)
		if o == nil {
			continue // not found archived (purged, or restored since): nothing to match
		}
		if v := o.Properties[obj.IDProperty]; v != "" {
			for _, t := range byID[id] {
				t.change.MatchField, t.change.MatchValue = obj.IDField, v
				t.change.ObjectCreatedAt = o.CreatedAt
			}
		}
	}
	return true
}

// groupTasks groups tasks by key, in the order each key first appears.
func groupTasks(tasks []*task, key func(*task) string) (keys []string, groups map[string][]*task) {
	groups = map[string][]*task{}
	for _, t := range tasks {
		k := key(t)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], t)
	}
	return keys, groups
}

// upsertsByEmail reports whether obj's objects are matched by their email
// (contacts), whose merged-away addresses HubSpot keeps on the survivor.
func upsertsByEmail(obj mapping.Object) bool {
	return obj.IDProperty == "email"
}

// reserveRead books a budget token for one read call made for tasks, waiting
// for its booked instant. It reports false when there is no room (or the
// budget failed, or a 429 paused it): tasks are then released and held, or
// left for finish when ctx ended. The context it returns carries the call.
func (c *cycle) reserveRead(ctx context.Context, tasks []*task) (context.Context, bool) {
	w := c.w
	if w.cfg.Budget != nil {
		var res budget.Reservation
		var err error
		sched, ok := w.cfg.Budget.(budget.Scheduler)
		if ok && w.cfg.BudgetAhead > 0 {
			res, err = sched.Schedule(ctx, w.cfg.BudgetKey, 1, w.cfg.BudgetAhead)
		} else {
			res, err = w.cfg.Budget.Reserve(ctx, w.cfg.BudgetKey, 1)
		}
		if err != nil {
			if ctx.Err() == nil {
				c.log.Warn("inbound: budget reserve failed; releasing the events waiting for a read", "err", err)
				c.release(ctx, w.cfg.PollInterval, tasks)
				c.hold(tasks, w.cfg.PollInterval)
			}
			return ctx, false
		}
		if !res.Granted {
			c.log.Debug("inbound: no HubSpot budget; releasing the events waiting for a read", "events", len(tasks), "retry_after", res.RetryAfter)
			c.release(ctx, res.RetryAfter, tasks)
			c.hold(tasks, res.RetryAfter)
			return ctx, false
		}
		if res.Wait > 0 {
			if !sleepCtx(ctx, res.Wait) {
				return ctx, false // finish releases the rest
			}
			// A 429 answered since the booking pauses every call, booked or not.
			paused, err := sched.Paused(ctx, w.cfg.BudgetKey)
			if err != nil || paused > 0 {
				wait := paused
				if err != nil {
					c.log.Warn("inbound: read the budget's pause failed; releasing the events waiting for a read", "err", err)
					wait = w.cfg.PollInterval
				}
				c.release(ctx, wait, tasks)
				c.hold(tasks, wait)
				return ctx, false
			}
		}
		ctx = budget.WithCall(ctx, w.cfg.BudgetKey, res) // counted from its answer
	}
	return ctx, true
}

func (c *cycle) fetchChunk(ctx context.Context, obj mapping.Object, ids []string, byID map[string][]*task, tasks []*task) []*task {
	w := c.w
	ctx, ok := c.reserveRead(ctx, tasks)
	if !ok {
		return nil
	}
	props := obj.ReadProperties()
	if upsertsByEmail(obj) && slices.ContainsFunc(tasks, func(t *task) bool { return t.ev.EventType == store.EventMerge }) {
		// The emails the survivor keeps from the contacts merged into it find
		// the record of a merged-away contact whose link is unrecorded; the
		// ids merged into it say how many such contacts there may be.
		props = append(props, hubspot.AdditionalEmailsProperty, hubspot.MergedObjectIDsProperty)
	}
	result, err := w.cfg.HubSpot.BatchRead(ctx, hubspot.ObjectType(obj.HubSpotType), ids, props, "")
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		if hubspot.KindOf(err) == hubspot.KindNotFound && len(ids) == 1 {
			// Created and deleted since: the deletion event carries the rest.
			// Only for a single id: a whole-call 404 for several ids says the
			// object type is wrong (a mapping error), not that all were deleted.
			// A merge still re-points its records, without the moved values.
			var ready []*task
			for _, t := range tasks {
				if t.ev.EventType == store.EventMerge {
					ready = append(ready, t)
					continue
				}
				c.complete(t, OutcomeIgnored)
			}
			return ready
		}
		var delay time.Duration
		for _, t := range tasks {
			delay = max(delay, c.retry(ctx, t, fmt.Sprintf("read %s from HubSpot: %v", obj.HubSpotType, err), hubspot.RetryAfterOf(err)))
		}
		c.hold(tasks, delay)
		return nil
	}
	var ready []*task
	for _, id := range ids {
		o := result.ResultByID(id)
		for _, t := range byID[id] {
			merge := t.ev.EventType == store.EventMerge
			if o == nil || o.Archived {
				if merge {
					// The survivor is gone (or merged on) since: the merge
					// still re-points its records; later events carry the rest.
					ready = append(ready, t)
					continue
				}
				c.complete(t, OutcomeIgnored)
				continue
			}
			fields, err := obj.FromHubSpot(o.Properties)
			if err != nil {
				c.fail(ctx, t, err.Error())
				continue
			}
			t.change.Fields = fields
			if obj.IDProperty != "" {
				if v := o.Properties[obj.IDProperty]; v != "" {
					t.change.MatchField, t.change.MatchValue = obj.IDField, v
				}
			}
			if merge {
				// The survivor's values, under the guard at the merge's time:
				// a local edit after the merge still wins.
				if upsertsByEmail(obj) {
					t.change.MergedMatchValues = o.AdditionalEmails()
					t.change.SurvivorMergedIDs = o.MergedObjectIDs()
				}
				ready = append(ready, t)
				continue
			}
			// The read reflects every change up to updatedAt, not just the creation.
			if o.UpdatedAt.After(t.change.OccurredAt) {
				t.change.OccurredAt = o.UpdatedAt.UTC()
			}
			ready = append(ready, t)
		}
	}
	return ready
}

// kindRank orders events of one record that share an occurredAt.
var kindRank = map[string]int{
	store.EventCreate: 0, store.EventRestore: 1, store.EventUpdate: 2, store.EventMerge: 3,
	store.EventDelete: 4, store.EventPrivacyDelete: 5,
}

// attrApplyConcurrency is the cycle span's attribute naming how many records
// its applies ran at once.
const attrApplyConcurrency = "hubsync.apply_concurrency"

// lane is one record's ready events in a cycle, in the order they apply.
type lane struct {
	tasks []*task
	// stopped is set once an event of the record was retried, lost its lease
	// or could not be read whole: the record's later events wait with it,
	// released with delay (no attempt used), so it never applies out of order.
	stopped bool
	delay   time.Duration
	held    []*task
}

func (l *lane) stop(delay time.Duration) { l.stopped, l.delay = true, delay }

// apply applies the ready tasks in occurredAt order (then kind, then event id)
// within each record; creations that needed a fetch from HubSpot become ready
// after the rest, so the order of arrival in tasks means nothing. When an
// event of a record fails, the record's later events wait with it (released,
// no attempt used).
//
// Different records apply at once, at most ApplyConcurrency of them, since
// an apply's time goes to round trips and its commit: they lock different
// records, like the records other replicas apply meanwhile (MySQL's gap locks
// aside, see WorkerConfig.ApplyConcurrency). A merge does not fit
// this: it re-points its merged ids onto the survivor, other records that may
// have earlier events in the same cycle (the creation of a contact and its
// later merge into another). A cycle holding a merge therefore applies every
// event one at a time in occurredAt order across all records, as does
// ApplyConcurrency 1. Merges are rare, so this costs little.
func (c *cycle) apply(ctx context.Context, tasks []*task) {
	slices.SortStableFunc(tasks, func(a, b *task) int {
		return cmp.Or(
			cmp.Compare(a.canon.OccurredAt, b.canon.OccurredAt),
			cmp.Compare(kindRank[a.ev.EventType], kindRank[b.ev.EventType]),
			compareNumeric(a.canon.EventID, b.canon.EventID),
		)
	})
	lanes := map[recordKey]*lane{}
	var order []*lane // by each record's first event
	merge := false
	for _, t := range tasks {
		l := lanes[t.key()]
		if l == nil {
			l = &lane{}
			if d, ok := c.heldFor(t.key()); ok {
				l.stop(d) // its creation could not be read
			}
			lanes[t.key()] = l
			order = append(order, l)
		}
		l.tasks = append(l.tasks, t)
		merge = merge || t.ev.EventType == store.EventMerge
	}
	sctx := outbox.WithSyncSource(ctx, c.w.cfg.Source)
	n := min(c.w.cfg.ApplyConcurrency, len(order))
	if merge {
		n = 1
	}
	// The cycle's trace says how many records it applied at once, so a slow
	// cycle that held a merge explains itself.
	trace.SpanFromContext(ctx).SetAttributes(attribute.Int(attrApplyConcurrency, n))
	if n <= 1 {
		for i := 0; i < len(tasks); {
			g := edit(tasks, i)
			if ctx.Err() != nil || !c.stepEdit(ctx, sctx, lanes[tasks[i].key()], g) {
				return // finish releases the rest
			}
			i += len(g)
		}
		for _, l := range order {
			c.release(ctx, l.delay, l.held)
		}
		return
	}
	// n goroutines take the records in order; each applies a record's events
	// one after another. A lane and its tasks belong to the goroutine running
	// it; what the cycle shares is guarded by c.mu.
	var next atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(order) || ctx.Err() != nil {
					return
				}
				c.applyLane(ctx, sctx, order[i])
			}
		}()
	}
	wg.Wait()
}

// applyLane applies one record's events in order, then releases those that
// waited behind a failure.
func (c *cycle) applyLane(ctx, sctx context.Context, l *lane) {
	for i := 0; i < len(l.tasks); {
		g := edit(l.tasks, i)
		if ctx.Err() != nil || !c.stepEdit(ctx, sctx, l, g) {
			return // finish releases the rest
		}
		i += len(g)
	}
	c.release(ctx, l.delay, l.held)
}

// edit returns ts[i] with the property changes of its record that follow it
// in ts (sorted as apply sorts them) and share its occurredAt, up to the
// first event that does not, that sets a field one of them sets, or that is
// another record's: one edit of several properties, which HubSpot sends as an
// event per property. When a cycle applies one event at a time, ts holds
// every record's events, and another record's event between them ends the
// edit: two external ids may reach one local record (a merged id redirects
// to its survivor), and the one-at-a-time order is every event's.
func edit(ts []*task, i int) []*task {
	t := ts[i]
	if !isPropertyChange(t) {
		return ts[i : i+1]
	}
	g := []*task{t}
	set := maps.Clone(t.change.Fields)
	for _, u := range ts[i+1:] {
		if u.canon.OccurredAt != t.canon.OccurredAt || u.key() != t.key() ||
			!isPropertyChange(u) || setsAny(set, u.change.Fields) {
			break
		}
		g = append(g, u)
		maps.Copy(set, u.change.Fields)
	}
	return g
}

// setsAny reports whether fields sets a field that set holds.
func setsAny(set, fields map[string]any) bool {
	for f := range fields {
		if _, ok := set[f]; ok {
			return true
		}
	}
	return false
}

func isPropertyChange(t *task) bool {
	return t.ev.EventType == store.EventUpdate && t.change.Partial && !t.done
}

// stepEdit applies the events of one edit (edit) as one change: one
// transaction, one lock of the record, one write of its row and clocks, and
// one complete of all their leases, instead of one of each per property.
// When that apply fails, nothing of it was written, and the events apply one
// at a time (step), so that each meets its own outcome: a value one property
// cannot take, a record not yet linked and read whole, a lost lease.
func (c *cycle) stepEdit(ctx, sctx context.Context, l *lane, g []*task) bool {
	if len(g) > 1 && !l.stopped {
		ch := g[0].change
		ch.Fields = map[string]any{}
		for _, t := range g {
			maps.Copy(ch.Fields, t.change.Fields)
		}
		res, fenced, err := c.applyChange(sctx, g, ch)
		if err == nil {
			for _, t := range g {
				outcome := OutcomeApplied
				if res.Outcome == apply.Stale || allStale(t.change.Fields, res.Stale) {
					outcome = OutcomeStale
				}
				if fenced {
					t.done = true // completed in the apply's own transaction
					c.outcome(t, outcome)
				} else {
					c.complete(t, outcome)
				}
			}
			c.log.Debug("inbound: applied an edit", "events", len(g), "object", ch.ObjectType,
				"external_id", ch.ExternalID, "outcome", res.Outcome, "stale", res.Stale)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
	}
	for _, t := range g {
		if ctx.Err() != nil || !c.step(ctx, sctx, l, t) {
			return false
		}
	}
	return true
}

// allStale reports whether every field of fields is in stale.
func allStale(fields map[string]any, stale []string) bool {
	for f := range fields {
		if !slices.Contains(stale, f) {
			return false
		}
	}
	return len(fields) > 0
}

// step applies t, an event of l's record, unless an earlier event stopped the
// record (then t waits in l.held). It reports false when ctx ended during the
// apply: t is left for finish to release.
func (c *cycle) step(ctx, sctx context.Context, l *lane, t *task) bool {
	if l.stopped {
		l.held = append(l.held, t)
		return true
	}
	res, fenced, err := c.applyOne(sctx, t)
	if errors.Is(err, apply.ErrUnlinked) && t.change.Partial {
		if !c.readWhole(ctx, t) {
			if d, ok := c.heldFor(t.key()); ok {
				l.stop(d)
			}
			return true
		}
		res, fenced, err = c.applyOne(sctx, t)
	}
	if err == nil {
		outcome := OutcomeApplied
		if res.Outcome == apply.Stale || (len(res.Applied) == 0 && len(res.Stale) > 0) {
			outcome = OutcomeStale
		}
		c.log.Debug("inbound: applied", "event", t.ev.ID, "kind", t.ev.EventType, "object", t.ev.ObjectType,
			"external_id", t.change.ExternalID, "outcome", res.Outcome, "stale", res.Stale)
		if fenced {
			// Completed in the apply's own transaction.
			t.done = true
			c.outcome(t, outcome)
		} else {
			c.complete(t, outcome)
		}
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	if errors.Is(err, store.ErrLeaseLost) {
		// Another worker took the event over: nothing was applied, and the
		// record's later events are its too.
		t.done = true
		c.log.Warn("inbound: lease lost; the apply was rolled back", "event", t.ev.ID, "kind", t.ev.EventType, "external_id", t.ev.ExternalID)
		c.outcome(t, OutcomeLeaseLost)
		l.stop(0)
		return true
	}
	if errors.Is(err, apply.ErrPermanent) {
		c.fail(ctx, t, err.Error())
		return true
	}
	// Keep the record's order: the rest of its events wait with this one.
	l.stop(c.retry(ctx, t, err.Error(), hubspot.RetryAfterOf(err)))
	return true
}

// readWhole turns the update t, whose external id no local record is linked
// to, into the whole object read from HubSpot, matched by the mapping's id
// property like a creation: most often it is an object hubsync itself just
// created, edited in HubSpot before the outbound worker recorded its link, and
// it belongs to the local record it was created from, not to a new record made
// of the one changed property. It reports whether t is ready to apply again;
// otherwise fetchChunk settled it (ignored when gone, retried or released and
// held when the read failed).
func (c *cycle) readWhole(ctx context.Context, t *task) bool {
	t.change.Partial = false
	id := t.change.ExternalID
	ready := c.fetchChunk(ctx, t.obj, []string{id}, map[string][]*task{id: {t}}, []*task{t})
	return len(ready) == 1
}

// applyOne applies one task. With a FencedApplier, the inbound event is
// completed under its lease in the apply's transaction (fenced is true): a
// worker whose lease was lost changes nothing and gets store.ErrLeaseLost.
// Other Appliers apply, and the cycle completes the event afterwards.
func (c *cycle) applyOne(ctx context.Context, t *task) (res apply.Result, fenced bool, err error) {
	return c.applyChange(ctx, []*task{t}, t.change)
}

// applyChange is applyOne of ch, the change of the tasks g (one event, or
// one edit's: stepEdit), under the first one's span; the fence completes
// every one of them.
func (c *cycle) applyChange(ctx context.Context, g []*task, ch apply.Change) (res apply.Result, fenced bool, err error) {
	attrs := []attribute.KeyValue{attribute.String(eventtrace.AttrEventID, g[0].ev.ID)}
	if len(g) > 1 {
		attrs = append(attrs, attribute.Int("hubsync.events", len(g)))
	}
	ctx, span := c.w.tracer.Start(trace.ContextWithSpan(ctx, g[0].span), "hubsync.inbound.apply", trace.WithAttributes(attrs...))
	defer func() { eventtrace.End(span, string(res.Outcome), err) }()
	if fa, ok := c.w.cfg.Applier.(apply.FencedApplier); ok && !c.w.unfenced.Load() {
		leases := make([]store.Lease, len(g))
		for i, t := range g {
			leases[i] = t.ev.Lease()
		}
		res, err := fa.ApplyFenced(ctx, ch, func(ctx context.Context, tx store.DBTX) error {
			return c.w.cfg.Store.CompleteTx(ctx, tx, leases...)
		})
		if !errors.Is(err, apply.ErrFenceUnsupported) {
			return res, true, err
		}
		c.w.unfenced.Store(true)
		c.log.Warn("inbound: the Applier cannot run a fence in its transaction; applying unfenced", "err", err)
	}
	res, err = c.w.cfg.Applier.Apply(ctx, ch)
	return res, false, err
}

// compareNumeric orders decimal ids numerically, falling back to text.
func compareNumeric(a, b string) int {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA == nil && errB == nil {
		return cmp.Compare(x, y)
	}
	return cmp.Compare(a, b)
}

func (c *cycle) outcome(t *task, o string) {
	t.span.SetAttributes(attribute.String(eventtrace.AttrOutcome, o))
	if h := c.w.cfg.Hooks.OnOutcome; h != nil {
		h(o, t.ev.EventType)
	}
}

// complete queues t for the cycle's one Complete call.
func (c *cycle) complete(t *task, outcome string) {
	t.done = true
	c.mu.Lock()
	c.completes = append(c.completes, t)
	c.mu.Unlock()
	c.outcome(t, outcome)
}

// opCtx is the context of a fenced state change: it survives the cycle's
// cancellation, so that a stopping worker still records what it did.
func opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

func (c *cycle) fail(ctx context.Context, t *task, msg string) {
	t.done = true
	ctx, cancel := opCtx(ctx)
	defer cancel()
	c.log.Warn("inbound: event dead-lettered", "event", t.ev.ID, "kind", t.ev.EventType, "external_id", t.ev.ExternalID, "err", msg)
	if err := c.w.cfg.Store.Fail(ctx, t.ev.Lease(), msg); err != nil {
		c.storeErr(t, "fail", err)
		return
	}
	c.outcome(t, OutcomeDead)
}

// retry records a failed attempt and returns how long until the event is
// claimable again (0 when it became a dead letter or the store failed).
func (c *cycle) retry(ctx context.Context, t *task, msg string, minDelay time.Duration) time.Duration {
	t.done = true
	ctx, cancel := opCtx(ctx)
	defer cancel()
	res, err := c.w.cfg.Store.IncrementRetry(ctx, t.ev.Lease(), msg, minDelay)
	if err != nil {
		c.storeErr(t, "retry", err)
		return 0
	}
	if res.Dead {
		c.log.Warn("inbound: event dead-lettered after retries", "event", t.ev.ID, "kind", t.ev.EventType, "external_id", t.ev.ExternalID, "err", msg)
		c.outcome(t, OutcomeDead)
		return 0
	}
	c.log.Info("inbound: event will be retried", "event", t.ev.ID, "kind", t.ev.EventType, "next_attempt", res.NextAttemptDate, "err", msg)
	c.outcome(t, OutcomeRetry)
	return max(res.NextAttemptDate.Sub(c.w.cfg.Now()), 0)
}

func (c *cycle) release(ctx context.Context, delay time.Duration, tasks []*task) {
	var leases []store.Lease
	var released []*task
	for _, t := range tasks {
		if !t.done {
			t.done = true
			leases = append(leases, t.ev.Lease())
			released = append(released, t)
		}
	}
	if len(leases) == 0 {
		return
	}
	ctx, cancel := opCtx(ctx)
	defer cancel()
	if err := c.w.cfg.Store.Release(ctx, delay, leases...); err != nil {
		if errors.Is(err, store.ErrLeaseLost) {
			c.log.Warn("inbound: lease lost on release", "err", err)
			return
		}
		c.addErr(fmt.Errorf("release %d inbound events: %w", len(leases), err))
		return
	}
	for _, t := range released {
		c.outcome(t, OutcomeReleased)
	}
}

func (c *cycle) storeErr(t *task, op string, err error) {
	if errors.Is(err, store.ErrLeaseLost) {
		c.log.Warn("inbound: lease lost", "event", t.ev.ID, "op", op)
		c.outcome(t, OutcomeLeaseLost)
		return
	}
	c.addErr(fmt.Errorf("%s inbound event %s: %w", op, t.ev.ID, err))
}

func (c *cycle) addErr(err error) {
	c.mu.Lock()
	c.errs = append(c.errs, err)
	c.mu.Unlock()
}

// finish completes what was handled and releases what was not (a cancelled
// cycle), with a context that outlives the cycle's.
func (c *cycle) finish(ctx context.Context, tasks []*task) {
	cctx, cancel := opCtx(ctx)
	defer cancel()
	if len(c.completes) > 0 {
		leases := make([]store.Lease, len(c.completes))
		for i, t := range c.completes {
			leases[i] = t.ev.Lease()
		}
		if err := c.w.cfg.Store.Complete(cctx, leases...); err != nil {
			if errors.Is(err, store.ErrLeaseLost) {
				c.log.Warn("inbound: leases lost before completion", "err", err)
			} else {
				c.addErr(fmt.Errorf("complete %d inbound events: %w", len(leases), err))
			}
		}
	}
	var rest []*task
	for _, t := range tasks {
		if !t.done {
			rest = append(rest, t)
		}
	}
	c.release(cctx, 0, rest)
}

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
