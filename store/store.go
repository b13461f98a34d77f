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
	// ignores it (it takes only the named events).
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
}

// DeadLetterFilter selects dead letters.
type DeadLetterFilter struct {
	Key     string // Source or Destination, exact; empty means all
	Limit   int    // default 100
	AfterID string // page after this id (ids ascending)
}

// InboundRepository is the _System_IntegrationInbound queue.
type InboundRepository interface {
	// Enqueue inserts an event. A duplicate IdempotencyKey is skipped and reported
	// with Inserted false, never an error.
	Enqueue(ctx context.Context, ev InboundEvent) (EnqueueResult, error)
	// EnqueueTx is Enqueue inside the caller's transaction.
	EnqueueTx(ctx context.Context, tx DBTX, ev InboundEvent) (EnqueueResult, error)
	// EnqueueBatch inserts events in one transaction: all are kept or none.
	EnqueueBatch(ctx context.Context, evs []InboundEvent) ([]EnqueueResult, error)
	// GetPending lists claimable events of one source, oldest first, without claiming.
	GetPending(ctx context.Context, source string, limit int) ([]InboundEvent, error)
	// Claim leases the claimable events of up to p.Limit records of source p.Key,
	// each record's head with its due followers (see the package doc).
	Claim(ctx context.Context, p ClaimParams) ([]InboundEvent, error)
	// ClaimIDs leases the named events if they are claimable (push dispatch).
	ClaimIDs(ctx context.Context, ids []string, p ClaimParams) ([]InboundEvent, error)
	// Get reads one event; ErrNotFound when absent.
	Get(ctx context.Context, id string) (InboundEvent, error)
	LeaseOps
	// Cleanup deletes processed events older than cutoff, batchSize rows per statement.
	Cleanup(ctx context.Context, cutoff time.Time, batchSize int) (int64, error)
	// DeadLetters lists failed events.
	DeadLetters(ctx context.Context, f DeadLetterFilter) ([]InboundEvent, error)
	// Requeue returns the named failed events to pending with RetryCount 0.
	Requeue(ctx context.Context, ids ...string) (int64, error)
	// RequeueAll returns every failed event of one source to pending.
	RequeueAll(ctx context.Context, source string) (int64, error)
}

// OutboundRepository is the _System_IntegrationOutbound queue.
type OutboundRepository interface {
	// Enqueue inserts an event in its own transaction.
	Enqueue(ctx context.Context, ev OutboundEvent) (EnqueueResult, error)
	// EnqueueTx inserts an event inside the caller's transaction, so the change and
	// the event commit together or not at all.
	EnqueueTx(ctx context.Context, tx DBTX, ev OutboundEvent) (EnqueueResult, error)
	// GetPending lists claimable events of one destination, oldest first, without claiming.
	GetPending(ctx context.Context, destination string, limit int) ([]OutboundEvent, error)
	// Claim leases the claimable events of up to p.Limit records of destination
	// p.Key, each record's head with its due followers (see the package doc).
	Claim(ctx context.Context, p ClaimParams) ([]OutboundEvent, error)
	// ClaimIDs leases the named events if they are claimable (push dispatch).
	ClaimIDs(ctx context.Context, ids []string, p ClaimParams) ([]OutboundEvent, error)
	// Get reads one event; ErrNotFound when absent.
	Get(ctx context.Context, id string) (OutboundEvent, error)
	LeaseOps
	// Cleanup deletes processed events older than cutoff, batchSize rows per statement.
	Cleanup(ctx context.Context, cutoff time.Time, batchSize int) (int64, error)
	// DeadLetters lists failed events.
	DeadLetters(ctx context.Context, f DeadLetterFilter) ([]OutboundEvent, error)
	// Requeue returns the named failed events to pending with RetryCount 0.
	Requeue(ctx context.Context, ids ...string) (int64, error)
	// RequeueAll returns every failed event of one destination to pending.
	RequeueAll(ctx context.Context, destination string) (int64, error)
}

// InternalRepository is the _System_OutboxEvent queue of internal record events.
type InternalRepository interface {
	// EnqueueTx inserts an event inside the caller's transaction.
	EnqueueTx(ctx context.Context, tx DBTX, ev InternalEvent) (EnqueueResult, error)
	// Claim leases the claimable events of up to p.Limit records, each record's
	// head with its due followers (p.Key is ignored).
	Claim(ctx context.Context, p ClaimParams) ([]InternalEvent, error)
	// Get reads one event; ErrNotFound when absent.
	Get(ctx context.Context, id string) (InternalEvent, error)
	LeaseOps
	// Cleanup deletes processed events older than cutoff, batchSize rows per statement.
	Cleanup(ctx context.Context, cutoff time.Time, batchSize int) (int64, error)
	// DeadLetters lists failed events (f.Key is ignored).
	DeadLetters(ctx context.Context, f DeadLetterFilter) ([]InternalEvent, error)
	// Requeue returns the named failed events to pending with RetryCount 0.
	Requeue(ctx context.Context, ids ...string) (int64, error)
}

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
}
