package store

import (
	"cmp"
	"context"
	"database/sql"
	"time"
)

// Defaults for claims.
const (
	LeaseDurationDefault = 2 * time.Minute
	ClaimLimitDefault    = 100
	MaxPerRecordDefault  = 100
	CleanupBatchDefault  = 1000
)

// DBTX is what the ...Tx variants write through: a *sql.Tx (or *sql.DB, or
// *sql.Conn) of the same database the store uses. The PostgreSQL backend also
// offers pgx.Tx variants.
type DBTX interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Config configures a backend. The zero value means the defaults.
type Config struct {
	// Now is the clock for every timestamp the store writes or compares. All
	// replicas should run NTP-synced clocks. Default time.Now.
	Now func() time.Time
	// Retry decides backoff and dead-lettering for IncrementRetry.
	Retry RetryPolicy
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Retry = c.Retry.WithDefaults()
	return c
}

// ClaimParams says what to claim and for how long.
type ClaimParams struct {
	// Key is the Source (inbound) or Destination (outbound) to claim from; matched
	// exactly. Ignored by the internal queue.
	Key string
	// Limit is the most records (head events) a claim takes; default
	// ClaimLimitDefault. With each head come its record's due followers (see
	// MaxPerRecord), so a claim may return more than Limit events: at most
	// Limit × MaxPerRecord. ClaimIDs ignores it.
	Limit int
	// MaxPerRecord is the most events of one record a claim hands out, head
	// included; default MaxPerRecordDefault. 1 hands out heads only. ClaimIDs
	// honours it too: each named head comes with its due followers.
	MaxPerRecord int
	// LeaseDuration is how long the claim holds the events; default LeaseDurationDefault.
	LeaseDuration time.Duration
	// Owner names the claiming worker (host/pid/worker), for operators.
	Owner string
}

// WithDefaults returns p with zero fields set to their defaults.
func (p ClaimParams) WithDefaults() ClaimParams {
	p.Limit = cmp.Or(p.Limit, ClaimLimitDefault)
	p.MaxPerRecord = cmp.Or(p.MaxPerRecord, MaxPerRecordDefault)
	p.LeaseDuration = cmp.Or(p.LeaseDuration, LeaseDurationDefault)
	return p
}

// RetryResult reports what IncrementRetry did.
type RetryResult struct {
	// Dead is true when the event reached the policy's MaxAttempts and is now failed.
	Dead bool
	// NextAttemptDate is when the event becomes claimable again (zero when Dead).
	NextAttemptDate time.Time
}

// LeaseOps are the fenced state changes after a claim. Each applies only while the
// event is still processing under the named lease; otherwise it changes nothing and
// returns an error matching ErrLeaseLost (a *LeaseLostError for batches).
type LeaseOps interface {
	// Complete marks the events processed. Leases that were lost are reported in a
	// *LeaseLostError; the others are completed.
	Complete(ctx context.Context, leases ...Lease) error
	// CompleteTx is Complete inside the caller's transaction on the store's
	// database: the events are processed when tx commits, and until then their
	// rows are locked, so no other worker can claim them. A worker that applies
	// an event's effects in tx and calls CompleteTx first makes apply-and-complete
	// one fenced transaction: when any lease was lost it returns a
	// *LeaseLostError, and the caller must roll back.
	CompleteTx(ctx context.Context, tx DBTX, leases ...Lease) error
	// Fail marks the event failed (dead letter) with errMsg, at once.
	Fail(ctx context.Context, lease Lease, errMsg string) error
	// IncrementRetry records a failed attempt: RetryCount+1 and errMsg. When the
	// retry policy's MaxAttempts is reached the event becomes failed; otherwise it
	// returns to pending with NextAttemptDate = now + max(policy delay, minDelay).
	IncrementRetry(ctx context.Context, lease Lease, errMsg string, minDelay time.Duration) (RetryResult, error)
	// Release returns leased events to pending, claimable after delay, without
	// counting a failure (a worker stopping, or no API budget).
	Release(ctx context.Context, delay time.Duration, leases ...Lease) error
	// ExtendLease is a worker's heartbeat: each event still processing under
	// its lease keeps its lease until at least now + d (the store's clock); a
	// later expiry is never shortened. Events already finished (completed,
	// failed, released) are left alone. Leases whose event was claimed again by
	// another worker (a newer Attempt) are reported in a *LeaseLostError: the
	// caller must not act on those events any more.
	ExtendLease(ctx context.Context, d time.Duration, leases ...Lease) error
}

// DeadLetterFilter selects dead letters.
type DeadLetterFilter struct {
	Key     string // Source or Destination, exact; empty means all
	Limit   int    // default 100
	AfterID string // page after this id (ids ascending)
}

// Queue is one of the three queues, for its event type E: InboundEvent
// (_System_IntegrationInbound), OutboundEvent (_System_IntegrationOutbound) or
// InternalEvent (_System_OutboxEvent). The key of a queue is the exact Source
// (inbound) or Destination (outbound); the internal queue has none and ignores
// every key argument.
type Queue[E Event] interface {
	// Enqueue inserts an event in its own transaction. An inbound event whose
	// IdempotencyKey is already present is skipped and reported with Inserted
	// false, never an error. An inbound event with Status StatusProcessed is
	// stored processed and never claimed (see QueueState).
	Enqueue(ctx context.Context, ev E) (EnqueueResult, error)
	// EnqueueTx is Enqueue inside the caller's transaction, so the change and
	// the event commit together or not at all.
	EnqueueTx(ctx context.Context, tx DBTX, ev E) (EnqueueResult, error)
	// GetPending lists claimable events of one key, oldest first, without claiming.
	GetPending(ctx context.Context, key string, limit int) ([]E, error)
	// Claim leases the claimable events of up to p.Limit records of key p.Key,
	// each record's head with its due followers (see the package doc).
	Claim(ctx context.Context, p ClaimParams) ([]E, error)
	// ClaimIDs leases the named events that are claimable heads of their
	// records, each with its record's due followers up to p.MaxPerRecord (push
	// dispatch: a delivery names a record's head and pushes the record's due
	// changes together). A named event that is not a head is skipped; it
	// comes with its head. p.Key and p.Limit are ignored.
	ClaimIDs(ctx context.Context, ids []string, p ClaimParams) ([]E, error)
	// Get reads one event; ErrNotFound when absent.
	Get(ctx context.Context, id string) (E, error)
	LeaseOps
	// Cleanup deletes processed events older than cutoff, batchSize rows per statement.
	Cleanup(ctx context.Context, cutoff time.Time, batchSize int) (int64, error)
	// DeadLetters lists failed events, ids ascending.
	DeadLetters(ctx context.Context, f DeadLetterFilter) ([]E, error)
	// Requeue returns the named failed events to pending with RetryCount 0.
	Requeue(ctx context.Context, ids ...string) (int64, error)
	// RequeueAll returns every failed event of one key to pending with
	// RetryCount 0 (of the whole queue for the internal queue).
	RequeueAll(ctx context.Context, key string) (int64, error)
}

// BatchEnqueuer inserts several events in one transaction: all are kept or none.
type BatchEnqueuer[E Event] interface {
	EnqueueBatch(ctx context.Context, evs []E) ([]EnqueueResult, error)
}

// InboundRepository is the _System_IntegrationInbound queue; the webhook
// receiver stores a delivery's events with one EnqueueBatch.
type InboundRepository interface {
	Queue[InboundEvent]
	BatchEnqueuer[InboundEvent]
}

// OutboundRepository is the _System_IntegrationOutbound queue.
type OutboundRepository = Queue[OutboundEvent]

// InternalRepository is the _System_OutboxEvent queue of internal record events.
type InternalRepository = Queue[InternalEvent]

// StatsRow counts the events of one queue, key and status.
type StatsRow struct {
	Direction Direction
	Key       string // Source, Destination, or "" for internal
	Status    Status
	Count     int64
	// OldestCreated is the oldest CreatedDate among these events.
	OldestCreated time.Time
}

// Stats is a snapshot of all three queues.
type Stats struct {
	Rows []StatsRow
	// Now is the store clock's time of the snapshot, for computing ages.
	Now time.Time
}

// Store is one database holding the three queues. Backends: sqlitestore, pgstore,
// mysqlstore.
type Store interface {
	Dialect() Dialect
	// DB is the database the store writes to; the application may use it for its
	// own tables so that record changes and events share a transaction.
	DB() *sql.DB
	Inbound() InboundRepository
	Outbound() OutboundRepository
	Internal() InternalRepository
	Stats(ctx context.Context) (Stats, error)
	// Now is the store's clock.
	Now() time.Time
	// Retryable reports whether err, from a statement or transaction on DB, is
	// a transient failure after which the whole transaction may run again:
	// a deadlock or lock wait timeout (MySQL/MariaDB 1213, 1205), a deadlock
	// or serialization failure (PostgreSQL 40P01, 40001). The store retries
	// its own transactions; records.Service retries its transactions too.
	Retryable(err error) bool
}
