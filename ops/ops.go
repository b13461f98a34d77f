package ops

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hubsync/hubsync/idempotency"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/internal/textcheck"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/subscriptions"
)

// ErrBadRequest is wrapped by the errors of operator requests that cannot be
// carried out as asked (a missing direction, ids and all together, ...). The admin
// API answers them with 400.
var ErrBadRequest = errors.New("bad request")

// Defaults of the operator functions.
const (
	DeadLetterLimitDefault = 100
	DeadLetterLimitMax     = 1000
)

// QueueMetrics are the counts of one queue and one exact Source (inbound) or
// Destination (outbound): the seed's loadMetrics, keyed by the column instead of
// an event-type prefix.
type QueueMetrics struct {
	Direction store.Direction `json:"direction"`
	// Key is the Source or Destination; "" for the internal queue.
	Key string `json:"key"`
	// Counts has every status, zero when there is none of it.
	Counts map[store.Status]int64 `json:"counts"`
	// OldestPending is the CreatedDate of the oldest pending event, if any.
	OldestPending *time.Time `json:"oldest_pending,omitempty"`
	// OldestPendingAgeSeconds is how long the oldest pending event has waited.
	OldestPendingAgeSeconds float64 `json:"oldest_pending_age_seconds"`
}

// Metrics is a snapshot of every queue.
type Metrics struct {
	// Now is the store clock at the snapshot.
	Now    time.Time      `json:"now"`
	Queues []QueueMetrics `json:"queues"`
	// DeadLetters and Pending total every queue.
	DeadLetters int64 `json:"dead_letters"`
	Pending     int64 `json:"pending"`
}

// LoadMetrics counts the events of every queue by exact Source/Destination and
// status, with the age of the oldest pending event (seed §8.1's loadMetrics).
func LoadMetrics(ctx context.Context, st store.Store) (Metrics, error) {
	stats, err := st.Stats(ctx)
	if err != nil {
		return Metrics{}, fmt.Errorf("load metrics: %w", err)
	}
	return metricsFromStats(stats), nil
}

var allStatuses = []store.Status{store.StatusPending, store.StatusProcessing, store.StatusProcessed, store.StatusFailed}

// Statuses returns every status an event can have, in lifecycle order: the
// keys of QueueMetrics.Counts.
func Statuses() []store.Status { return slices.Clone(allStatuses) }

func metricsFromStats(stats store.Stats) Metrics {
	type qk struct {
		d store.Direction
		k string
	}
	byKey := map[qk]*QueueMetrics{}
	m := Metrics{Now: stats.Now}
	for _, r := range stats.Rows {
		q := byKey[qk{r.Direction, r.Key}]
		if q == nil {
			q = &QueueMetrics{Direction: r.Direction, Key: r.Key, Counts: map[store.Status]int64{}}
			for _, s := range allStatuses {
				q.Counts[s] = 0
			}
			byKey[qk{r.Direction, r.Key}] = q
		}
		q.Counts[r.Status] += r.Count
		switch r.Status {
		case store.StatusFailed:
			m.DeadLetters += r.Count
		case store.StatusPending:
			m.Pending += r.Count
			if r.Count > 0 && !r.OldestCreated.IsZero() && (q.OldestPending == nil || r.OldestCreated.Before(*q.OldestPending)) {
				t := r.OldestCreated
				q.OldestPending = &t
				q.OldestPendingAgeSeconds = max(0, stats.Now.Sub(t).Seconds())
			}
		}
	}
	for _, q := range byKey {
		m.Queues = append(m.Queues, *q)
	}
	slices.SortFunc(m.Queues, func(a, b QueueMetrics) int {
		return cmp.Or(cmp.Compare(directionOrder(a.Direction), directionOrder(b.Direction)), cmp.Compare(a.Key, b.Key))
	})
	return m
}

func directionOrder(d store.Direction) int {
	switch d {
	case store.DirectionInbound:
		return 0
	case store.DirectionOutbound:
		return 1
	default:
		return 2
	}
}

// ParseDirection parses "inbound", "outbound" or "internal".
func ParseDirection(s string) (store.Direction, error) {
	switch d := store.Direction(s); d {
	case store.DirectionInbound, store.DirectionOutbound, store.DirectionInternal:
		return d, nil
	case "":
		return "", fmt.Errorf("%w: direction is missing; use inbound, outbound or internal", ErrBadRequest)
	default:
		return "", fmt.Errorf("%w: direction %q is unknown; use inbound, outbound or internal", ErrBadRequest, s)
	}
}

// DeadLetter is a failed event of any queue, as the admin API and the CLI show it.
type DeadLetter struct {
	ID        string          `json:"id"`
	Direction store.Direction `json:"direction"`
	// Key is the Source or Destination ("" for internal events).
	Key        string `json:"key"`
	ObjectType string `json:"object_type"`
	// RecordID is the local record id (outbound, internal) or the external id
	// (inbound).
	RecordID         string          `json:"record_id"`
	EventType        string          `json:"event_type"`
	RetryCount       int             `json:"retry_count"`
	Attempt          int             `json:"attempt"`
	ErrorMessage     string          `json:"error_message"`
	CreatedDate      time.Time       `json:"created_date"`
	LastModifiedDate time.Time       `json:"last_modified_date"`
	Payload          json.RawMessage `json:"payload,omitempty"`
}

// DeadLetterQuery selects dead letters of one queue.
type DeadLetterQuery struct {
	Direction store.Direction
	// Key is the exact Source or Destination; empty means all. Ignored for internal.
	Key string
	// Limit defaults to DeadLetterLimitDefault and is capped at DeadLetterLimitMax.
	Limit int
	// After pages: only ids greater than this one.
	After string
}

// ListDeadLetters lists failed events, ids ascending.
func ListDeadLetters(ctx context.Context, st store.Store, q DeadLetterQuery) ([]DeadLetter, error) {
	qu, err := queueOf(st, q.Direction)
	if err != nil {
		return nil, err
	}
	if q.Limit < 0 {
		return nil, fmt.Errorf("%w: limit %d is negative", ErrBadRequest, q.Limit)
	}
	if err := checkText("key", q.Key); err != nil {
		return nil, err
	}
	if err := checkText("after", q.After); err != nil {
		return nil, err
	}
	f := store.DeadLetterFilter{Key: q.Key, Limit: min(cmp.Or(q.Limit, DeadLetterLimitDefault), DeadLetterLimitMax), AfterID: q.After}
	if q.Direction == store.DirectionInternal {
		f.Key = ""
	}
	hs, err := qu.deadLetters(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list %s dead letters: %w", q.Direction, err)
	}
	out := make([]DeadLetter, len(hs))
	for i, h := range hs {
		out[i] = DeadLetter{
			ID: h.ID, Direction: h.Direction, Key: h.Key, ObjectType: h.ObjectType, RecordID: h.RecordID, EventType: h.EventType,
			RetryCount: h.RetryCount, Attempt: h.Attempt, ErrorMessage: h.ErrorMessage,
			CreatedDate: h.CreatedDate, LastModifiedDate: h.LastModifiedDate, Payload: h.Payload,
		}
	}
	return out, nil
}

// RetryRequest names dead letters to re-queue: either IDs, or All of one Key
// (the seed's retryDeadLetters by exact Source/Destination).
type RetryRequest struct {
	Direction store.Direction `json:"direction"`
	IDs       []string        `json:"ids,omitempty"`
	// Key is the exact Source or Destination, required with All (except for the
	// internal queue, which has none).
	Key string `json:"key,omitempty"`
	All bool   `json:"all,omitempty"`
}

// RetryResult reports how many dead letters went back to pending.
type RetryResult struct {
	Requeued int64 `json:"requeued"`
}

func (r RetryRequest) validate() error {
	if _, err := ParseDirection(string(r.Direction)); err != nil {
		return err
	}
	switch {
	case len(r.IDs) > 0 && r.All:
		return fmt.Errorf("%w: give either ids or all, not both", ErrBadRequest)
	case len(r.IDs) == 0 && !r.All:
		return fmt.Errorf("%w: nothing selected; give ids, or all with a key", ErrBadRequest)
	case r.All && r.Key == "" && r.Direction != store.DirectionInternal:
		return fmt.Errorf("%w: all needs the exact key (source or destination, e.g. \"hubspot\")", ErrBadRequest)
	case slices.Contains(r.IDs, ""):
		return fmt.Errorf("%w: an id is empty", ErrBadRequest)
	case len(r.IDs) > DiscardIDsMax:
		return fmt.Errorf("%w: %d ids; retry at most %d at once (or all, with a key)", ErrBadRequest, len(r.IDs), DiscardIDsMax)
	}
	if err := checkText("key", r.Key); err != nil {
		return err
	}
	for _, id := range r.IDs {
		if err := checkText("id", id); err != nil {
			return err
		}
	}
	return nil
}

// checkText refuses a request's text that no database could hold (see
// package textcheck), naming the field.
func checkText(field, v string) error {
	if p := textcheck.Problem(v); p != "" {
		return fmt.Errorf("%w: %s %q %s", ErrBadRequest, field, v, p)
	}
	return nil
}

// RetryDeadLetters returns the selected failed events to pending with their
// retry count reset (the seed's retryDeadLetters). Events that are not failed
// are left alone and not counted.
func RetryDeadLetters(ctx context.Context, st store.Store, r RetryRequest) (RetryResult, error) {
	if err := r.validate(); err != nil {
		return RetryResult{}, err
	}
	qu, err := queueOf(st, r.Direction)
	if err != nil {
		return RetryResult{}, err
	}
	var n int64
	if r.All {
		n, err = qu.RequeueAll(ctx, r.Key)
	} else {
		n, err = qu.Requeue(ctx, r.IDs...)
	}
	if err != nil {
		return RetryResult{Requeued: n}, fmt.Errorf("retry %s dead letters: %w", r.Direction, err)
	}
	return RetryResult{Requeued: n}, nil
}

// queue is one store.Queue as the operator functions see it, whatever its
// event type: events come out as headers.
type queue interface {
	Cleanup(ctx context.Context, cutoff time.Time, batchSize int) (int64, error)
	Requeue(ctx context.Context, ids ...string) (int64, error)
	RequeueAll(ctx context.Context, key string) (int64, error)
	deadLetters(ctx context.Context, f store.DeadLetterFilter) ([]store.EventHeader, error)
	getPending(ctx context.Context, key string, limit int) ([]store.EventHeader, error)
	get(ctx context.Context, id string) (store.EventHeader, error)
}

// headerQueue implements queue for the store.Queue of one event type.
type headerQueue[E store.Event] struct{ store.Queue[E] }

func headers[E store.Event](evs []E, err error) ([]store.EventHeader, error) {
	out := make([]store.EventHeader, len(evs))
	for i, e := range evs {
		out[i] = e.Header()
	}
	return out, err
}

func (q headerQueue[E]) deadLetters(ctx context.Context, f store.DeadLetterFilter) ([]store.EventHeader, error) {
	return headers(q.DeadLetters(ctx, f))
}

func (q headerQueue[E]) get(ctx context.Context, id string) (store.EventHeader, error) {
	e, err := q.Get(ctx, id)
	if err != nil {
		return store.EventHeader{}, err
	}
	return e.Header(), nil
}

func (q headerQueue[E]) getPending(ctx context.Context, key string, limit int) ([]store.EventHeader, error) {
	return headers(q.GetPending(ctx, key, limit))
}

// queueOf returns st's queue of direction d.
func queueOf(st store.Store, d store.Direction) (queue, error) {
	if _, err := ParseDirection(string(d)); err != nil {
		return nil, err
	}
	switch d {
	case store.DirectionInbound:
		return headerQueue[store.InboundEvent]{st.Inbound()}, nil
	case store.DirectionOutbound:
		return headerQueue[store.OutboundEvent]{st.Outbound()}, nil
	default:
		return headerQueue[store.InternalEvent]{st.Internal()}, nil
	}
}

// Retention defaults of the cleanup: inbound events are kept longer, for audit.
const (
	OutboundRetentionDefault = 7 * 24 * time.Hour
	InboundRetentionDefault  = 30 * 24 * time.Hour
	InternalRetentionDefault = 7 * 24 * time.Hour
	// SubscriptionRetentionDefault keeps a settled subscription request as
	// long as a processed inbound event: a month of GET
	// /api/subscription-requests/{id} answers and Idempotency-Key replays.
	SubscriptionRetentionDefault = 30 * 24 * time.Hour
	// DiscardedRetentionDefault keeps a discarded dead letter, with its
	// reason, for a quarter: the answer to "where did this event go?"
	// outlives the processed events around it (inbound: 30 days).
	DiscardedRetentionDefault = 90 * 24 * time.Hour
)

// CleanupConfig says how long processed events, and the other rows the
// cleanup deletes, are kept. The zero value means the defaults.
type CleanupConfig struct {
	InboundRetention  time.Duration
	OutboundRetention time.Duration
	InternalRetention time.Duration
	// IdempotencyRetention is how long Idempotency-Keys of the API are
	// honoured; default idempotency.RetentionDefault.
	IdempotencyRetention time.Duration
	// SubscriptionRetention is how long a subscription request settled for
	// good (synced or superseded) is kept after its last change, unless it is
	// its contact's newest (kept always); pending and failed ones are never
	// deleted. A retry under a deleted request's Idempotency-Key is a new
	// request. Default SubscriptionRetentionDefault.
	SubscriptionRetention time.Duration
	// DiscardedRetention is how long a discarded dead letter is kept, with
	// its reason, in hubsync_discarded_event; default
	// DiscardedRetentionDefault.
	DiscardedRetention time.Duration
	// BatchSize is the most rows one DELETE removes (store.CleanupBatchDefault).
	BatchSize int
}

// WithDefaults returns c with zero fields set to their defaults.
func (c CleanupConfig) WithDefaults() CleanupConfig {
	c.InboundRetention = cmp.Or(c.InboundRetention, InboundRetentionDefault)
	c.OutboundRetention = cmp.Or(c.OutboundRetention, OutboundRetentionDefault)
	c.InternalRetention = cmp.Or(c.InternalRetention, InternalRetentionDefault)
	c.IdempotencyRetention = cmp.Or(c.IdempotencyRetention, idempotency.RetentionDefault)
	c.SubscriptionRetention = cmp.Or(c.SubscriptionRetention, SubscriptionRetentionDefault)
	c.DiscardedRetention = cmp.Or(c.DiscardedRetention, DiscardedRetentionDefault)
	c.BatchSize = cmp.Or(c.BatchSize, store.CleanupBatchDefault)
	return c
}

// Validate reports the settings that cannot work, each naming its field.
func (c CleanupConfig) Validate() error {
	var errs []error
	for _, r := range []struct {
		name string
		v    time.Duration
	}{
		{"InboundRetention", c.InboundRetention}, {"OutboundRetention", c.OutboundRetention}, {"InternalRetention", c.InternalRetention},
		{"IdempotencyRetention", c.IdempotencyRetention}, {"SubscriptionRetention", c.SubscriptionRetention}, {"DiscardedRetention", c.DiscardedRetention},
	} {
		if r.v < 0 {
			errs = append(errs, fmt.Errorf("%s is %s; use a positive duration (0 means the default)", r.name, r.v))
		}
	}
	if c.BatchSize < 0 {
		errs = append(errs, fmt.Errorf("cleanup BatchSize is %d; use a positive number (0 means %d)", c.BatchSize, store.CleanupBatchDefault))
	}
	return errors.Join(errs...)
}

// CleanupResult counts the processed events deleted per queue.
type CleanupResult struct {
	Inbound  int64 `json:"inbound"`
	Outbound int64 `json:"outbound"`
	Internal int64 `json:"internal"`
	// Rejected counts the refused webhook events deleted (inbound retention).
	Rejected int64 `json:"rejected"`
	// IdempotencyKeys counts the expired Idempotency-Keys deleted.
	IdempotencyKeys int64 `json:"idempotency_keys"`
	// SubscriptionRequests counts the settled subscription requests deleted.
	SubscriptionRequests int64 `json:"subscription_requests"`
	// Discarded counts the discarded dead letters deleted.
	Discarded int64 `json:"discarded"`
}

// Cleanup deletes processed events older than each queue's retention, in
// batches. Pending, processing and failed events are never touched. It also
// deletes, each past its own retention, refused webhook events, expired
// Idempotency-Keys, subscription requests settled for good that a newer
// request of their contact replaced (subscriptions.Store.Cleanup) and
// discarded dead letters.
func Cleanup(ctx context.Context, st store.Store, c CleanupConfig) (CleanupResult, error) {
	if err := c.Validate(); err != nil {
		return CleanupResult{}, err
	}
	c = c.WithDefaults()
	now := st.Now()
	var res CleanupResult
	for _, r := range []struct {
		dir       store.Direction
		retention time.Duration
		n         *int64
	}{
		{store.DirectionInbound, c.InboundRetention, &res.Inbound},
		{store.DirectionOutbound, c.OutboundRetention, &res.Outbound},
		{store.DirectionInternal, c.InternalRetention, &res.Internal},
	} {
		qu, err := queueOf(st, r.dir)
		if err != nil {
			return res, err
		}
		if *r.n, err = qu.Cleanup(ctx, now.Add(-r.retention), c.BatchSize); err != nil {
			return res, fmt.Errorf("clean up %s: %w", r.dir, err)
		}
	}
	rejected, err := inbound.NewRejectedLog(st)
	if err != nil {
		return res, err
	}
	if res.Rejected, err = rejected.Cleanup(ctx, now.Add(-c.InboundRetention), c.BatchSize); err != nil {
		return res, fmt.Errorf("clean up rejected webhook events: %w", err)
	}
	n, err := idempotency.NewStore(st).Cleanup(ctx, now.Add(-c.IdempotencyRetention))
	if err != nil {
		return res, err
	}
	res.IdempotencyKeys = n
	if res.SubscriptionRequests, err = subscriptions.NewStore(st).Cleanup(ctx, now.Add(-c.SubscriptionRetention), c.BatchSize); err != nil {
		return res, err
	}
	if res.Discarded, err = cleanupDiscarded(ctx, st, now.Add(-c.DiscardedRetention), c.BatchSize); err != nil {
		return res, err
	}
	return res, nil
}
