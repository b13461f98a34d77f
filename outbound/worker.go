package outbound

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/eventtrace"
	"github.com/hubsync/hubsync/internal/service"
	"github.com/hubsync/hubsync/internal/startstop"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

// Defaults of Config.
const (
	// BatchSizeDefault is how many events one cycle claims: one full batch call
	// when every event is of a different record.
	BatchSizeDefault = hubspot.MaxBatchInputs
	// LeaseDurationDefault is how long a claim holds its events without a
	// heartbeat. While a cycle runs, heartbeats extend it every third of it, so
	// it bounds how long a crashed replica's events wait, not how long a cycle
	// may take. With HTTPTimeoutDefault, the lease a killed replica leaves is
	// at most 16 s (the extension before a call; 18 s before a call booked
	// BudgetAheadDefault ahead), so its events are claimed again well within
	// 30 s (issue 16).
	LeaseDurationDefault = 15 * time.Second
	// LeaseDurationMin is the shortest LeaseDuration: heartbeats run every
	// third of it.
	LeaseDurationMin = time.Second
	// HTTPTimeoutDefault bounds each HubSpot call the worker makes. A batch
	// write of 100 records takes HubSpot a second or two; a call that runs out
	// is retried like any timeout. Every call must be answered under the lease,
	// so this, not the lease, decides how long a crashed replica's events can
	// stay leased (see Config.LeaseDuration): 30 s here left them leased for
	// 46 s.
	HTTPTimeoutDefault = 10 * time.Second
	// PollIntervalDefault is the wait after a cycle that found nothing to do.
	PollIntervalDefault = time.Second
	// ConcurrencyDefault is how many cycles one worker runs at once: while one
	// waits for HubSpot, another claims, links or completes.
	ConcurrencyDefault = 3
	// FillWaitDefault is how long a cycle may keep claiming to fill its batch
	// calls (Config.FillWait).
	FillWaitDefault = 250 * time.Millisecond
	// FillWaitMax bounds Config.FillWait.
	FillWaitMax = time.Second
	// FillClaimsMax bounds how many BatchSize claims one cycle makes while
	// filling: a mixed backlog of three object types with creations, updates
	// and deletions needs about nine claims to fill each call.
	FillClaimsMax = 10
	// BudgetAheadDefault is how far ahead a polling cycle may book its calls
	// (Config.BudgetAhead).
	BudgetAheadDefault = 2 * time.Second
	// BudgetAheadMax bounds Config.BudgetAhead.
	BudgetAheadMax = 10 * time.Second
	// NarrowFor is how long after the shared budget refused one of its cycles
	// a worker runs only one of its Concurrency loops. A refusal says the
	// budget, not HubSpot's latency, is the bottleneck: then more cycles add
	// nothing but claims of records they must release again, and records that
	// go round (in chaos runs at the budget, one cycle per replica halved the
	// re-claims and met the 30 s recovery goal that three missed:
	// BENCHMARKS.md, eighth session). Without refusals the loops overlap, so
	// that calls waiting on HubSpot keep the budget busy. One budget window.
	NarrowFor = budget.WindowDefault
	// AuthRetryDelayDefault is how long events wait after HubSpot refused the token.
	AuthRetryDelayDefault = time.Minute
	// NotFoundWaitDefault is how long an update whose HubSpot object is not
	// found waits, each of NotFoundWaits times, for HubSpot's deletion or
	// merge of it to be applied (Config.NotFoundWait).
	NotFoundWaitDefault = 30 * time.Second
	// NotFoundWaits is how many NotFoundWait an update whose HubSpot object
	// is not found waits, keeping its link, before the record is written
	// afresh.
	NotFoundWaits = 2
	// HoldDefault is Config.Hold's default: a call then carries about two
	// seconds of its (object type, operation)'s changes, and a change waits
	// at most about four seconds for its call.
	HoldDefault = 2 * time.Second
	// HoldMax bounds Config.Hold.
	HoldMax = 10 * time.Second
	// HoldFor is how long after the shared budget refused one of its cycles,
	// or booked one of its calls ahead for want of room, a worker claims at the hold cadence
	// (Config.Hold). Holding makes calls fuller, so the budget has room again
	// and stops refusing; the cadence must outlast that by far, or the worker
	// goes back to claiming the flow as it comes, fills the budget with small
	// calls within seconds, and holds again. With 30 s, 59 % of a chaos
	// run's calls came from those seconds (BENCHMARKS.md, ninth session).
	// After a burst that made the budget short, changes wait for a tick for
	// this long, and for as long after it as the held calls fill an eighth of
	// the window (renewShare).
	HoldFor = 5 * time.Minute
	// holdCheckEvery is how often a worker that does not hold reads how full
	// the shared budget's window is (Config.Hold), when the budget can tell.
	holdCheckEvery = time.Second
	// holdShare: a worker holds once the budget's window holds 1/holdShare
	// of its limit. Holding replicas keep the window at about a quarter of
	// 190 in chaos runs, so that a replica that restarts sees it and holds
	// with them; and a quarter of the burst limit, sustained, is already more
	// than HubSpot's daily limits allow (250,000 calls a day are 15 % of 190
	// per 10 s).
	holdShare = 4
	// renewShare: a worker in the second half of its hold renews it, for
	// every replica (NoteShort), while the budget's window holds 1/renewShare
	// of its limit. Holding replicas keep the window at about a quarter, so a
	// hold that ran out while the flow went on would only send the replicas
	// back to claiming it as it comes, in small calls, until the window is a
	// quarter full again; a flow that no longer fills an eighth of the window
	// even in held calls lets the hold run out.
	renewShare = 8
)

// storeOpTimeout bounds the bookkeeping that follows HubSpot calls; it runs
// even when the cycle's context was cancelled, so that what HubSpot accepted
// is recorded.
const storeOpTimeout = 15 * time.Second

// callLease is how much lease a HubSpot call needs left when it starts: the
// call's own deadline (HTTPTimeout), then a margin to store its result. The
// storing takes milliseconds and runs under the heartbeat as well, so half the
// call's timeout is margin enough; the margin is what the lease outlives the
// latest answer by.
func (c Config) callLease() time.Duration {
	return c.HTTPTimeout + min(storeOpTimeout, c.HTTPTimeout/2)
}

// HubSpot is the part of *hubspot.Client the worker calls.
type HubSpot interface {
	BatchCreate(ctx context.Context, t hubspot.ObjectType, inputs []hubspot.CreateInput) (*hubspot.BatchResult, error)
	BatchUpdate(ctx context.Context, t hubspot.ObjectType, inputs []hubspot.UpdateInput) (*hubspot.BatchResult, error)
	BatchUpsert(ctx context.Context, t hubspot.ObjectType, inputs []hubspot.UpsertInput) (*hubspot.BatchResult, error)
	BatchRead(ctx context.Context, t hubspot.ObjectType, ids []string, properties []string, idProperty string) (*hubspot.BatchResult, error)
	BatchArchive(ctx context.Context, t hubspot.ObjectType, ids []string) error
}

var _ HubSpot = (*hubspot.Client)(nil)

// HistoryReader is implemented by HubSpot clients that read property
// histories (*hubspot.Client does). The worker reads one, on a rare path,
// to tell whose object an upsert resolved two records to (see ownersFirst);
// without it, those records are linked in no particular order.
type HistoryReader interface {
	BatchReadWithHistory(ctx context.Context, t hubspot.ObjectType, ids []string, properties, history []string) (*hubspot.BatchResult, error)
}

var _ HistoryReader = (*hubspot.Client)(nil)

// LocalRecords is what the worker asks of the local records
// (Config.LocalRecords).
type LocalRecords interface {
	// TombstoneDeleted keeps a local-delete tombstone of the HubSpot id of
	// each record of linked (record id → HubSpot id) deleted here, waiting
	// for a deletion in flight, and returns those records' ids.
	TombstoneDeleted(ctx context.Context, destination, objectType string, linked map[string]string) ([]string, error)
	// Deleted reports whether the record is deleted here.
	Deleted(ctx context.Context, objectType, recordID string) (bool, error)
	// CurrentFields returns the fields of the records of ids that exist.
	CurrentFields(ctx context.Context, objectType string, ids []string) (map[string]map[string]any, error)
}

// SourceDeletedRecords is implemented by LocalRecords that tell a record
// the inbound side deleted (HubSpot deleted or merged away its object) from
// one the application deleted (*records.Service does). The worker then never
// writes afresh (no link) a record that HubSpot's change deleted while its
// local change waited, even one with no pushed state (its object came from
// HubSpot and none of its changes had reached it yet): upserted by email, it
// would write over the merge's survivor.
type SourceDeletedRecords interface {
	// DeletedAtSource returns the records among ids deleted by a change of
	// destination's applied here.
	DeletedAtSource(ctx context.Context, destination, objectType string, ids []string) ([]string, error)
}

// OverwriteRepairer is implemented by LocalRecords that can queue a write
// of a record's state (*records.Service does). HubSpot may take a record's
// upsert by email onto another record's object: a merge took the record's
// object away while its create's retry (whose earlier answer was lost) was
// under way, or the email moved to that object in HubSpot. The worker then
// asks for that object's local record to be written again over what the
// upsert left: theirs holds, by local field name, the values the upsert
// sent, and at is HubSpot's updatedAt in its answer (zero when unknown).
type OverwriteRepairer interface {
	RepairOverwrite(ctx context.Context, objectType, id string, theirs map[string]any, at time.Time) error
}

// Links stores which HubSpot object each local record is.
type Links interface {
	// Lookup returns the HubSpot id linked to a local record.
	Lookup(ctx context.Context, destination, objectType, recordID string) (externalID string, ok bool, err error)
	// Link records (or replaces) the HubSpot id of a local record.
	Link(ctx context.Context, destination, objectType, recordID, externalID string) error
}

// TombstoneLinks is implemented by Links that keep the tombstones the
// inbound side writes when HubSpot deletes or merges away an object
// (*links.Links does). The worker then never writes afresh a record whose
// object HubSpot deleted or merged away while a local change of it waited:
// the inbound side deleted or re-pointed the record, so a fresh upsert would
// bring the object back, or write over the merge's survivor.
type TombstoneLinks interface {
	Tombstone(ctx context.Context, destination, objectType, externalID string) (links.Tombstone, bool, error)
	// MergedMany returns the merged-away tombstones among externalIDs.
	MergedMany(ctx context.Context, destination, objectType string, externalIDs []string) (map[string]links.Tombstone, error)
}

// BatchLinks is implemented by Links that look up and link many records of
// one object type at once (*links.Links does). The worker then spends one
// query on a claim's lookups and one transaction on a call's links instead
// of one per record. LinkMany is all or nothing; when it fails, the worker
// links that call's records one by one.
type BatchLinks interface {
	// LookupMany returns the HubSpot ids of the linked records among recordIDs.
	LookupMany(ctx context.Context, destination, objectType string, recordIDs []string) (map[string]string, error)
	// LinkMany links each record id of pairs to its HubSpot id.
	LinkMany(ctx context.Context, destination, objectType string, pairs map[string]string) error
}

// PushedLinks is implemented by Links that remember the last state of each
// record that HubSpot accepted (*links.Links does, in hubsync_pushed). The
// worker completes without a call an event that is not newer than it (a
// re-queued dead letter whose record was pushed since), and, with OwedLinks,
// clears the owed fields a write carried in the same transaction.
type PushedLinks interface {
	// LookupPushedMany returns the stored states among recordIDs.
	LookupPushedMany(ctx context.Context, destination, objectType string, recordIDs []string) (map[string]links.Pushed, error)
	// PushedMany stores states together with their links (or, for an
	// archive, the unlink), all or nothing.
	PushedMany(ctx context.Context, destination, objectType string, states []links.Pushed) error
}

// OwedLinks is implemented by Links that remember, per record, the fields
// of dead-lettered changes that no write carried yet (*links.Links does, in
// hubsync_owed). The worker sends only the fields the claimed events changed;
// with OwedLinks (together with PushedLinks, whose PushedMany clears what a
// write carried) a dead letter's fields ride along with the record's next
// successful write. Without it, a dead letter's change reaches HubSpot only
// when it is re-queued.
type OwedLinks interface {
	// AddOwed records fields (local field names) as owed for a record.
	AddOwed(ctx context.Context, destination, objectType, recordID string, fields []string) error
	// LookupOwedMany returns the owed fields among recordIDs.
	LookupOwedMany(ctx context.Context, destination, objectType string, recordIDs []string) (map[string][]string, error)
}

// RecordLookup is implemented by Links that find the record linked to a
// HubSpot id (*links.Links does); the worker names that record in the dead
// letter of a link conflict.
type RecordLookup interface {
	LookupRecord(ctx context.Context, destination, objectType, externalID string) (recordID string, ok bool, err error)
}

// Unlinker is implemented by Links that can forget a link. The worker
// unlinks a record after archiving it, and after HubSpot says its linked
// object no longer exists, so that a later create of the same record id
// creates a new object instead of updating a dead one.
type Unlinker interface {
	Unlink(ctx context.Context, destination, objectType, recordID string) error
}

// ErrAuth is wrapped by the error of a cycle in which HubSpot refused the
// access token (401/403): a configuration problem, not the records' fault, so
// their events are released (no attempt used) rather than failed.
var ErrAuth = errors.New("outbound: HubSpot refused the access token")

// The lifecycle errors every hubsync service returns; they are the same
// values in every package (outbound.ErrStarted == inbound.ErrStarted).
var (
	// ErrStarted is returned by Start on a running worker.
	ErrStarted = startstop.ErrStarted
	// ErrStopped is returned by Start after Stop: a Worker runs once.
	ErrStopped = startstop.ErrStopped
)

// Config configures a Worker. Zero values mean the defaults; Store, HubSpot,
// Links and Budget are required.
type Config struct {
	// Store is the outbound queue.
	Store store.OutboundRepository
	// HubSpot makes the calls; usually a *hubspot.Client.
	HubSpot HubSpot
	// Links maps local records to HubSpot ids.
	Links Links
	// Budget is the call budget shared by every worker of every replica.
	Budget budget.Budget
	// BudgetKey names the budget, e.g. "hubspot:<app>"; default Destination.
	BudgetKey string
	// Mapping maps local fields to HubSpot properties; default mapping.Default().
	Mapping *mapping.Set
	// Destination is the queue key to claim; default "hubspot".
	Destination string
	// Concurrency is how many cycles (claimed batches) the worker keeps in
	// flight at once; default ConcurrencyDefault. Their claims take turns (one
	// claimer per worker), the rest overlaps. The budget, not this number,
	// keeps the call rate within HubSpot's limit: each cycle reserves its
	// calls before making them. For NarrowFor after the budget refused one
	// of its cycles, the worker runs one cycle at a time.
	Concurrency int
	// BatchSize is the claim limit in events (not records: several events of
	// one record coalesce into one write); default BatchSizeDefault. After a
	// hold tick a holding loop claims FillClaimsMax times as many at once
	// (Config.Hold).
	BatchSize int
	// LeaseDuration is how long a claim holds its events unless extended: a
	// heartbeat extends the leases every LeaseDuration/3 while the cycle runs,
	// and before each HubSpot call the worker extends them to cover the call
	// (HTTPTimeout, plus half of it to store the result). So a crashed
	// replica's events wait at most max(LeaseDuration, 1.5 × HTTPTimeout + 1 s),
	// plus the wait of a call booked ahead (BudgetAhead).
	// At least LeaseDurationMin; default LeaseDurationDefault.
	LeaseDuration time.Duration
	// HTTPTimeout bounds each HubSpot call the worker makes (its own deadline,
	// within the client's Timeout); default HTTPTimeoutDefault. A call that
	// runs out of it is retried. The worker makes no call that could be
	// answered after its lease expired, so a longer HTTPTimeout leaves a
	// crashed replica's events leased longer.
	HTTPTimeout time.Duration
	// FillWait is how long a cycle may go on claiming, after a full claim,
	// while its batch calls are partly filled: one claim of a mixed backlog
	// (several object types, creations, updates and deletions) makes many small
	// calls, each of which costs a whole budget token. The cycle claims again
	// at once (no sleeping) while every claim comes back full (more work is
	// claimable), until each (object type, operation) has a full call of
	// hubspot.MaxBatchInputs records, FillClaimsMax claims were made, or
	// FillWait has passed; then it makes its calls. A record's events always
	// stay in one claim, in order, so filling never sends a record's later
	// change before an earlier one. After a hold tick, one larger claim
	// replaces filling (Config.Hold). Default FillWaitDefault, at most
	// FillWaitMax; negative turns filling off.
	FillWait time.Duration
	// BudgetAhead is how far ahead a polling cycle may book a call when the
	// budget's window is full, if Budget is a budget.Scheduler (NewMemory and
	// NewSQL are): the cycle keeps its claimed records (the heartbeat extends
	// their leases), waits for the booked instant and calls then. Room that
	// frees in the window is thus taken by a call that is ready, at once,
	// instead of by the first of the refused cycles to come back, claim and
	// plan again. When the next room is further away, the cycle releases its
	// records as before, and the worker claims again BudgetAhead before that
	// room frees, to book it. Claims by id (ProcessIDs: a push dispatcher's
	// delivery) never book ahead; they answer with the wait. Default
	// BudgetAheadDefault, at most BudgetAheadMax; negative never books ahead.
	BudgetAhead time.Duration
	// Hold is the cadence at which the worker claims while the budget, not
	// the flow of changes, limits its calls. A worker that claims the flow
	// as it arrives spends each call on what arrived since the last claim: a
	// few records per (object type, operation), so that the budget stays
	// saturated with small calls. For HoldFor after the budget refused one
	// of its cycles, booked one of its calls ahead because the window was
	// full (budget.Reservation.Full; not for pacing alone), or, for a budget
	// that can tell (budget.SQL's WindowUse, read once a second), held a
	// quarter of its limit or more, whoever made the calls, or was short
	// for any replica (WindowUse.ShortAt: a replica that restarts holds at
	// once when the others do, until HoldFor after that); a hold goes on
	// while the window holds an eighth of its limit (renewShare):
	//   - a loop whose claim found no backlog (fewer events than BatchSize)
	//     waits for the next multiple of Hold on the worker's clock (Now), plus
	//     a random part of up to half of Hold, instead of claiming again at
	//     once (Notify does not cut this wait short). Every replica's loops
	//     wake after the same instants, the first to claim takes what
	//     arrived since the one before, and a call carries about Hold's
	//     worth of its group's changes. A backlog is still claimed at once;
	//   - after a tick, a loop claims up to FillClaimsMax × BatchSize events
	//     in one claim;
	//   - a polling cycle holds each call filled below half whose events were
	//     all claimed for the first time: it releases them, without using an
	//     attempt and keeping their place, until the next multiple of Hold,
	//     when they are claimed with what arrived meanwhile and sent.
	// So while the budget is short a change waits for its call at most about
	// two Holds; otherwise Hold changes nothing. Default HoldDefault, at most
	// HoldMax; negative never holds.
	Hold time.Duration
	// PollInterval is the wait after a cycle that found nothing; Notify cuts it short.
	PollInterval time.Duration
	// AuthRetryDelay is how long events wait after a 401/403; default AuthRetryDelayDefault.
	AuthRetryDelay time.Duration
	// NotFoundWait is how long an update whose HubSpot object is gone (404)
	// waits, NotFoundWaits times and keeping the record's link, for the
	// SyncWorker to apply HubSpot's deletion or merge of the object: found by
	// its link, the record is then deleted or moved to the survivor, and the
	// update is superseded. Only then, if no deletion or merge came, is the
	// record unlinked and written afresh. The record is released for each
	// wait (no attempt used); the worker remembers when the wait began (in
	// memory: a restarted worker waits again). Default NotFoundWaitDefault.
	NotFoundWait time.Duration
	// Owner names this worker in leases; default "host/pid/outbound-random".
	Owner string
	// Logger receives the worker's logs; default slog.Default().
	Logger *slog.Logger
	// Now is the worker's clock (lease deadlines); use the store's clock. Default time.Now.
	Now func() time.Time
	// Handlers push the events of object types that are not records of
	// Mapping, by ObjectType (e.g. subscriptions.ObjectType); optional.
	Handlers map[string]Handler
	// OnLinkedMergedAway, with TombstoneLinks, is called after the worker
	// linked a record to an object it created that HubSpot had merged away
	// (into t.SurvivorID) before the link was stored: that merge's apply
	// found no record for the object and moved nothing. It should have the
	// merge applied again (inbound.EnqueueMerge), now that the record is
	// linked. It is called too when an update met its object's 404 and a
	// read found the object merged away (t.OccurredAt is then the
	// survivor's last change, the merge's own time being unknown): the
	// merge's webhook may be lost, or not applied yet. Its error is logged,
	// or retries the update. Optional; hubsync serve sets it (without it
	// such an update waits for the webhook).
	OnLinkedMergedAway func(ctx context.Context, objectType, recordID, hubspotID string, t links.Tombstone) error
	// LocalRecords, when set, is asked about the local records:
	//   - before an update, for the records' current fields: a field whose
	//     value differs from the one the update's last event carries was
	//     changed since, by a HubSpot change applied here (which enqueues no
	//     outbound event) or by a later local write (whose own event
	//     follows), so the event's older value is not written over it;
	//   - after the worker linked records to objects it created or adopted,
	//     which of them were deleted meanwhile: their deletion found no link
	//     to tombstone, and a HubSpot change of the new object would bring
	//     the record back before the deletion, queued after the create,
	//     archives it; each such object gets a local-delete tombstone.
	// Optional; hubsync serve sets the records service.
	LocalRecords LocalRecords
	// Metrics receives counters; several workers may share one. Default: a
	// private one, see Worker.Metrics.
	Metrics *Metrics
	// TracerProvider traces each cycle, each event (in the event's own trace,
	// see internal/eventtrace) and each HubSpot call, which links to the
	// events it carries; nil traces nothing.
	TracerProvider trace.TracerProvider
}

func (c Config) withDefaults() Config {
	c.Destination = cmp.Or(c.Destination, outbox.SyncSourceHubSpot)
	c.BudgetKey = cmp.Or(c.BudgetKey, c.Destination)
	if c.Mapping == nil {
		c.Mapping = mapping.Default()
	}
	c.BatchSize = cmp.Or(c.BatchSize, BatchSizeDefault)
	c.Concurrency = cmp.Or(c.Concurrency, ConcurrencyDefault)
	c.LeaseDuration = cmp.Or(c.LeaseDuration, LeaseDurationDefault)
	c.HTTPTimeout = cmp.Or(c.HTTPTimeout, HTTPTimeoutDefault)
	c.PollInterval = cmp.Or(c.PollInterval, PollIntervalDefault)
	c.FillWait = cmp.Or(c.FillWait, FillWaitDefault)
	c.Hold = cmp.Or(c.Hold, HoldDefault)
	c.BudgetAhead = cmp.Or(c.BudgetAhead, BudgetAheadDefault)
	c.AuthRetryDelay = cmp.Or(c.AuthRetryDelay, AuthRetryDelayDefault)
	c.NotFoundWait = cmp.Or(c.NotFoundWait, NotFoundWaitDefault)
	b := service.NewBase("outbound", service.Base{Logger: c.Logger, Now: c.Now, Owner: c.Owner})
	c.Logger, c.Now, c.Owner = b.Logger, b.Now, b.Owner
	if c.Metrics == nil {
		c.Metrics = NewMetrics()
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("Config.Store is nil; pass the store's Outbound() repository"))
	}
	if c.HubSpot == nil {
		errs = append(errs, errors.New("Config.HubSpot is nil; pass a *hubspot.Client"))
	}
	if c.Links == nil {
		errs = append(errs, errors.New("Config.Links is nil; pass the record link store"))
	}
	if c.Budget == nil {
		errs = append(errs, errors.New("Config.Budget is nil; pass a shared budget (budget.NewSQL for several replicas)"))
	}
	if c.BatchSize < 0 {
		errs = append(errs, fmt.Errorf("Config.BatchSize is %d; use a positive number (0 means %d)", c.BatchSize, BatchSizeDefault))
	}
	if c.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("Config.Concurrency is %d; use a positive number (0 means %d)", c.Concurrency, ConcurrencyDefault))
	}
	if c.LeaseDuration < 0 || c.HTTPTimeout < 0 || c.PollInterval < 0 || c.AuthRetryDelay < 0 || c.NotFoundWait < 0 {
		errs = append(errs, errors.New("Config durations must not be negative; use 0 for the defaults"))
	}
	if c.FillWait > FillWaitMax {
		errs = append(errs, fmt.Errorf("Config.FillWait is %s; use at most %s (a cycle's first events wait that long), 0 for %s, or negative for none", c.FillWait, FillWaitMax, FillWaitDefault))
	}
	if c.Hold > HoldMax {
		errs = append(errs, fmt.Errorf("Config.Hold is %s; use at most %s (a held change waits up to about two of it), 0 for %s, or negative for never", c.Hold, HoldMax, HoldDefault))
	}
	if c.BudgetAhead > BudgetAheadMax {
		errs = append(errs, fmt.Errorf("Config.BudgetAhead is %s; use at most %s (a booked call's records wait that long), 0 for %s, or negative for none", c.BudgetAhead, BudgetAheadMax, BudgetAheadDefault))
	}
	if c.LeaseDuration > 0 && c.LeaseDuration < LeaseDurationMin {
		errs = append(errs, fmt.Errorf("Config.LeaseDuration is %s; heartbeats run every third of it, so use at least %s; raise LeaseDuration (0 means %s)",
			c.LeaseDuration, LeaseDurationMin, LeaseDurationDefault))
	}
	return errors.Join(errs...)
}

// Worker pushes outbound events to HubSpot. Any number of workers, in any
// number of processes, cooperate through the store's leases.
type Worker struct {
	cfg    Config
	log    *slog.Logger
	notify []chan struct{} // one per loop
	// claimSem lets one Claim of this worker run at a time: its cycles overlap
	// in everything else, while the queue sees one claimer per worker
	// (concurrent claims of one queue contend for the same head rows).
	claimSem chan struct{}
	// budgetShut is when (Config.Now, Unix ns) the budget last said it has
	// room again after refusing a cycle: until then no cycle of this worker
	// claims. Claiming events only to release them, with the refused cycle's
	// wait, would use an attempt's writes for nothing and scatter the events'
	// due times, so that the claims after the wait come back with a few
	// records each instead of the backlog that built up.
	budgetShut atomic.Int64
	// refusedAt is when (Config.Now, Unix ns) the budget last refused one of
	// this worker's cycles; 0 if it never did. See NarrowFor.
	refusedAt atomic.Int64
	// shortAt is when (Config.Now, Unix ns) the budget last refused one of
	// this worker's cycles or booked one of its calls ahead for want of room
	// (Reservation.Full), or was short for another replica, as far as this
	// one has read (WindowUse.ShortAt); 0 if it never was. See Config.Hold.
	shortAt atomic.Int64
	// checkedAt is when (Config.Now, Unix ns) the worker last read the
	// budget's window for Config.Hold.
	checkedAt atomic.Int64
	// testNarrowed, when set (tests only), runs each time a loop stands aside
	// for NarrowFor.
	testNarrowed func()
	// notFound holds, per record, when (Config.Now) an update of it first met
	// its object's 404 without a tombstone: the record waits (released, no
	// attempt used) until NotFoundWaits × NotFoundWait past it.
	notFoundMu sync.Mutex
	notFound   map[RecordKey]notFound

	svc    startstop.Service
	tracer trace.Tracer
}

// NewWorker validates cfg and returns a Worker.
func NewWorker(cfg Config) (*Worker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("outbound: %w", err)
	}
	w := &Worker{cfg: cfg, log: cfg.Logger.With("component", "outbound", "owner", cfg.Owner), claimSem: make(chan struct{}, 1),
		tracer: eventtrace.Tracer(cfg.TracerProvider)}
	for range cfg.Concurrency {
		w.notify = append(w.notify, make(chan struct{}, 1))
	}
	return w, nil
}

// Metrics returns the worker's counters.
func (w *Worker) Metrics() *Metrics { return w.cfg.Metrics }

// Notify wakes the worker's idle loops from their poll wait (e.g. after an enqueue).
func (w *Worker) Notify() {
	for _, n := range w.notify {
		select {
		case n <- struct{}{}:
		default:
		}
	}
}

// Start runs the worker's Concurrency loops in the background and returns at
// once; ErrStarted when it runs already, ErrStopped after Stop. Cancelling ctx
// stops the loops hard (see Stop).
func (w *Worker) Start(ctx context.Context) error { return w.svc.Start(ctx, w.run) }

// Stop stops the loops gracefully: the in-flight cycles finish and record
// their outcome, and no new claim is made. If ctx ends first, the cycles are
// cancelled (their events released, no attempt used) and Stop returns once
// every loop has exited, with ctx's error. Stop is idempotent and safe on a
// worker never started.
func (w *Worker) Stop(ctx context.Context) error { return w.svc.Stop(ctx) }

// Done is closed once the worker has stopped: its loops have exited, or it
// was stopped before it started.
func (w *Worker) Done() <-chan struct{} { return w.svc.Done() }

func (w *Worker) run(ctx context.Context, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for i := range w.cfg.Concurrency {
		wg.Go(func() { w.loop(ctx, stop, w.notify[i], i == 0) })
	}
	wg.Wait()
}

// loop runs cycles back to back while they find work; it waits only when a
// cycle found nothing (PollInterval, cut short by Notify), failed
// (PollInterval) or was refused by the budget (until it has room). A loop
// other than the first stands aside for NarrowFor after a refusal.
func (w *Worker) loop(ctx context.Context, stop, notify <-chan struct{}, first bool) {
	ticked := false // the loop waited for a hold tick (Config.Hold)
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		if wait := w.narrowWait(); !first && wait > 0 {
			if w.testNarrowed != nil {
				w.testNarrowed()
			}
			if !service.Idle(ctx, stop, notify, wait) {
				return
			}
			continue
		}
		s, err := w.runOnce(ctx, ticked)
		if err != nil && !errors.Is(err, context.Canceled) {
			w.log.Error("outbound cycle failed", "err", err)
		}
		wait, wake := w.pause(s, err, notify)
		ticked = wait > 0 && wake == nil // only a tick's wait is not cut short
		if wait <= 0 {
			continue
		}
		if !service.Idle(ctx, stop, wake, wait) {
			return
		}
	}
}

// pause is how long a loop waits after a cycle that returned s and err, and
// what may cut the wait short: notify, or nothing while the worker holds
// (Config.Hold), so that a change queued meanwhile waits for the tick.
func (w *Worker) pause(s Summary, err error, notify <-chan struct{}) (time.Duration, <-chan struct{}) {
	switch {
	case err != nil:
		return w.cfg.PollInterval, notify
	case s.BudgetRetryAfter > 0:
		return s.BudgetRetryAfter, notify
	case s.Backlog:
		return 0, notify // more is claimable: claim it at once
	case w.holding():
		return w.tickWait(), nil
	case s.Claimed == 0:
		return w.cfg.PollInterval, notify
	}
	return 0, notify
}

// Summary reports what one cycle did, in events unless it says records.
type Summary struct {
	// Claimed is how many events the cycle leased.
	Claimed int
	// Records is how many distinct records they belong to.
	Records int
	// Coalesced is how many events rode along with another event of their record.
	Coalesced int
	// Calls is how many HubSpot calls the cycle made.
	Calls int
	// Completed counts events marked processed, Skipped the subset that needed
	// no call (nothing changed, sync-sourced, never in HubSpot, superseded),
	// Superseded the subset of those not newer than what HubSpot already had.
	Completed, Skipped, Superseded int
	// Retried counts events scheduled for another attempt, Failed those
	// dead-lettered, Released those returned without using an attempt.
	Retried, Failed, Released int
	// Held counts the events released until the next hold tick to fill a
	// later call (Config.Hold); they are counted in Released too.
	Held int
	// BudgetRetryAfter is, when the budget refused the cycle's calls, how long
	// until it has room; the events were released for that long.
	BudgetRetryAfter time.Duration
	// Backlog reports that the cycle's last claim came back full: more
	// events were claimable.
	Backlog bool
}

func (s *Summary) add(o Summary) {
	s.Claimed += o.Claimed
	s.Records += o.Records
	s.Coalesced += o.Coalesced
	s.Calls += o.Calls
	s.Completed += o.Completed
	s.Skipped += o.Skipped
	s.Superseded += o.Superseded
	s.Retried += o.Retried
	s.Failed += o.Failed
	s.Released += o.Released
	s.Held += o.Held
	s.Backlog = s.Backlog || o.Backlog
	s.BudgetRetryAfter = max(s.BudgetRetryAfter, o.BudgetRetryAfter)
}

// RunOnce claims up to BatchSize events and pushes them: one cycle. While
// the budget refused an earlier cycle of this worker and has no room yet, it
// claims nothing and reports the wait in BudgetRetryAfter. While the worker
// holds (Config.Hold), it claims as a loop does after a tick.
func (w *Worker) RunOnce(ctx context.Context) (Summary, error) { return w.runOnce(ctx, true) }

// runOnce is RunOnce; ticked says whether the cycle follows a hold tick, for
// which a holding worker claims what a fill would in one claim.
func (w *Worker) runOnce(ctx context.Context, ticked bool) (Summary, error) {
	if wait := w.budgetWait(); wait > 0 {
		return Summary{BudgetRetryAfter: wait}, nil
	}
	select {
	case w.claimSem <- struct{}{}:
	case <-ctx.Done():
		return Summary{}, ctx.Err()
	}
	w.checkWindow(ctx)
	// After a tick, the claim takes what a fill would, in one statement: the
	// first loop to wake then takes what arrived since the tick before,
	// before another loop's claim can split it. A backlog (no tick) is
	// claimed and filled as always.
	hold := w.holding()
	p := w.claimParams()
	big := hold && ticked
	if big {
		p.Limit *= FillClaimsMax
	}
	evs, err := w.cfg.Store.Claim(ctx, p)
	<-w.claimSem
	if err != nil {
		return Summary{}, fmt.Errorf("outbound: claim: %w", err)
	}
	full := len(evs) >= p.Limit
	if !big {
		evs, full, err = w.fill(ctx, evs)
	}
	s, perr := w.process(ctx, evs, max(w.cfg.BudgetAhead, 0), hold)
	s.Backlog = full
	w.budgetRefused(s.BudgetRetryAfter)
	return s, errors.Join(err, perr)
}

// holding reports whether the worker claims at the hold cadence: the budget
// refused one of its cycles, or booked one of its calls ahead for want of
// room, within HoldFor (Config.Hold).
func (w *Worker) holding() bool {
	at := w.shortAt.Load()
	return w.cfg.Hold > 0 && at != 0 && w.cfg.Now().UnixNano()-at < int64(HoldFor)
}

// windowReader is a Budget that can say how full a key's window is, and
// when it was last short for any replica, and that records when a worker
// found it short by its own measure (budget.SQL).
type windowReader interface {
	WindowUse(ctx context.Context, key string) (budget.WindowUse, error)
	NoteShort(ctx context.Context, key string) error
}

// checkWindow, at most once per holdCheckEvery while the worker does not
// hold or is in the second half of its hold, reads the budget's window, when
// the budget can tell. A worker that does not hold starts holding:
//   - when the window holds at least a quarter of its limit (calls counted
//     or booked, by any replica; holdShare). It records that in the budget
//     (NoteShort), so that the other replicas, and one that restarts, hold
//     too: holding keeps the window below a quarter, and a replica that
//     does not hold claims the flow as it comes, in calls of a few records;
//   - when the budget was short for any replica within HoldFor
//     (WindowUse.ShortAt): it then holds until HoldFor after that, as that
//     replica does.
//
// A holding worker takes a later ShortAt that another replica recorded, or,
// when there is none and the window holds at least an eighth of its limit
// (renewShare), records now as short, for itself and in the budget: its hold
// and its peers' go on while the flow keeps them busy.
//
// A failed read or write only logs: the refusals and the bookings still start
// holding.
func (w *Worker) checkWindow(ctx context.Context) {
	r, ok := w.cfg.Budget.(windowReader)
	if !ok || w.cfg.Hold <= 0 {
		return
	}
	now := w.cfg.Now().UnixNano()
	if w.holding() && now-w.shortAt.Load() < int64(HoldFor/2) {
		return
	}
	if last := w.checkedAt.Load(); now-last < int64(holdCheckEvery) || !w.checkedAt.CompareAndSwap(last, now) {
		return
	}
	u, err := r.WindowUse(ctx, w.cfg.BudgetKey)
	if err != nil {
		w.log.Warn("outbound: read the budget's window to decide whether to hold calls", "err", err)
		return
	}
	if u.ShortAt != nil {
		// Another replica's note, or this one's: noteShort keeps the later,
		// and holding() ignores one older than HoldFor.
		w.noteShort(u.ShortAt.UnixNano())
	}
	if now-w.shortAt.Load() < int64(HoldFor/2) {
		return // holding, with half its hold or more to go
	}
	share := holdShare
	if w.holding() {
		share = renewShare
	}
	if int64(share)*(u.Used+u.Booked) < u.Limit {
		return
	}
	w.noteShort(now)
	if err := r.NoteShort(ctx, w.cfg.BudgetKey); err != nil {
		w.log.Warn("outbound: record in the budget that calls are held", "err", err)
	}
}

// noteShort records that the budget was short at (Config.Now, Unix ns), unless
// a later instant is already recorded.
func (w *Worker) noteShort(at int64) {
	for {
		cur := w.shortAt.Load()
		if cur >= at || w.shortAt.CompareAndSwap(cur, at) {
			return
		}
	}
}

// nextTick is the first multiple of Config.Hold after now: the instant at
// which every replica's held records come due and their loops wake.
func (w *Worker) nextTick(now time.Time) time.Time { return now.Truncate(w.cfg.Hold).Add(w.cfg.Hold) }

// tickWait is how long a holding loop waits before it claims again: until
// the next tick, plus a random part of up to half of Config.Hold, so that
// the first loop to wake, of any replica, claims what arrived since the
// tick before, alone (the claim takes milliseconds).
func (w *Worker) tickWait() time.Duration {
	now := w.cfg.Now()
	return w.nextTick(now).Sub(now) + rand.N(w.cfg.Hold/2+1)
}

// budgetWait is how long the budget still has no room, by its last refusal
// of one of this worker's cycles; 0 when it may have.
func (w *Worker) budgetWait() time.Duration {
	return time.Duration(w.budgetShut.Load() - w.cfg.Now().UnixNano())
}

// narrowWait is how long the worker's loops other than its first still stand
// aside (NarrowFor); 0 when they may claim.
func (w *Worker) narrowWait() time.Duration {
	at := w.refusedAt.Load()
	if at == 0 {
		return 0
	}
	return max(time.Duration(at+int64(NarrowFor)-w.cfg.Now().UnixNano()), 0)
}

// budgetRefused notes a refusal that asked to wait d (0: none).
func (w *Worker) budgetRefused(d time.Duration) {
	if d <= 0 {
		return
	}
	now := w.cfg.Now()
	w.refusedAt.Store(now.UnixNano())
	w.noteShort(now.UnixNano())
	until := now.Add(d).UnixNano()
	for {
		cur := w.budgetShut.Load()
		if cur >= until || w.budgetShut.CompareAndSwap(cur, until) {
			return
		}
	}
}

// fill claims more events while the first claim came back full and the
// cycle's calls are partly filled (Config.FillWait). An error of a later
// claim ends the filling; the events claimed so far are still processed.
// It reports whether the last claim came back full (more is claimable).
func (w *Worker) fill(ctx context.Context, evs []store.OutboundEvent) ([]store.OutboundEvent, bool, error) {
	p := w.claimParams()
	full := len(evs) >= p.Limit
	if w.cfg.FillWait <= 0 || !full {
		return evs, full, nil
	}
	deadline := w.cfg.Now().Add(w.cfg.FillWait)
	for claims := 1; claims < FillClaimsMax && !callsFilled(evs) && w.cfg.Now().Before(deadline); claims++ {
		select {
		case w.claimSem <- struct{}{}:
		case <-ctx.Done():
			return evs, full, nil
		}
		more, err := w.cfg.Store.Claim(ctx, p)
		<-w.claimSem
		if err != nil {
			return evs, full, fmt.Errorf("outbound: claim to fill calls: %w", err)
		}
		evs = append(evs, more...)
		if full = len(more) >= p.Limit; !full {
			break // nothing more is claimable now
		}
	}
	return evs, full, nil
}

// callsFilled reports whether every (object type, operation) among evs has
// at least a full batch call of records. The operation is estimated from a
// record's last event (creation, update, deletion); the plan, which knows the
// records' links, decides.
func callsFilled(evs []store.OutboundEvent) bool {
	type group struct{ objectType, eventType string }
	last := map[RecordKey]store.OutboundEvent{}
	for _, e := range evs {
		k := RecordKey{ObjectType: e.ObjectType, RecordID: e.RecordID}
		if cur, ok := last[k]; !ok || e.Seq > cur.Seq {
			last[k] = e
		}
	}
	n := map[group]int{}
	for _, e := range last {
		n[group{e.ObjectType, e.EventType}]++
	}
	for _, c := range n {
		if c < hubspot.MaxBatchInputs {
			return false
		}
	}
	return true
}

// ProcessIDs claims the named events, if they are claimable, and pushes
// them: the entry point of a push dispatcher (QStash) that names events
// instead of polling. Events another worker holds are skipped. Each named
// record head comes with its record's due followers (coalescing, as a poll
// claim). While the budget refused an earlier cycle of this worker and has
// no room yet, it claims nothing and reports the wait in BudgetRetryAfter.
func (w *Worker) ProcessIDs(ctx context.Context, ids []string) (Summary, error) {
	if len(ids) == 0 {
		return Summary{}, nil
	}
	if wait := w.budgetWait(); wait > 0 {
		return Summary{BudgetRetryAfter: wait}, nil
	}
	evs, err := w.cfg.Store.ClaimIDs(ctx, ids, w.claimParams())
	if err != nil {
		return Summary{}, fmt.Errorf("outbound: claim ids: %w", err)
	}
	s, err := w.process(ctx, evs, 0, false)
	w.budgetRefused(s.BudgetRetryAfter)
	return s, err
}

func (w *Worker) claimParams() store.ClaimParams {
	return store.ClaimParams{Key: w.cfg.Destination, Limit: w.cfg.BatchSize, LeaseDuration: w.cfg.LeaseDuration, Owner: w.cfg.Owner}
}

// Concurrency is how many cycles the worker runs at once.
func (w *Worker) Concurrency() int { return w.cfg.Concurrency }
