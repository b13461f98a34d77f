package store

import (
	"encoding/json"
	"time"
)

// Status is the processing state of a queued event.
type Status string

// The states of a queued event. A retry returns an event to StatusPending with a
// later NextAttemptDate; StatusFailed is the dead letter state.
const (
	StatusPending    Status = "pending"
	StatusProcessing Status = "processing"
	StatusProcessed  Status = "processed"
	StatusFailed     Status = "failed"
)

// Direction names one of the three queues.
type Direction string

// The three queues.
const (
	DirectionInbound  Direction = "inbound"
	DirectionOutbound Direction = "outbound"
	DirectionInternal Direction = "internal"
)

// Inbound event types (InboundEvent.EventType).
const (
	EventCreate        = "create"
	EventUpdate        = "update"
	EventDelete        = "delete"
	EventMerge         = "merge"
	EventRestore       = "restore"
	EventAssociation   = "association"
	EventPrivacyDelete = "privacy_delete"
)

// Internal event types (InternalEvent.EventType).
const (
	EventRecordCreated = "record.created"
	EventRecordUpdated = "record.updated"
	EventRecordDeleted = "record.deleted"
)

// Lease identifies one claim of one event. Every state change after a claim is
// fenced by it: it applies only while the row is still processing under the same
// Attempt.
type Lease struct {
	ID      string
	Attempt int
}

// QueueState is the bookkeeping every queued event carries. Enqueue ignores it
// except CreatedDate, which defaults to the store's clock, and, for an inbound
// event, Status: empty (or StatusPending) stores it pending; StatusProcessed
// stores it already processed, with ProcessedDate the store's clock, so that
// no claim ever hands it out while it is kept for audit (the webhook receiver
// stores the echoes of our own writes so); any other status is an error. An
// event stored processed still takes its record's next Seq, and its
// IdempotencyKey still makes a later duplicate a no-op.
type QueueState struct {
	// Seq is the event's sequence within its record, assigned by the database in
	// the enqueueing transaction: a record's events have increasing Seq in the
	// order their transactions committed, whatever the enqueueing clocks said.
	// It never changes; a higher Seq is a later change (see the package doc).
	Seq int64
	// Lane is the event's place in its record's claim order: Seq at enqueue,
	// and a new sequence, after every other event of the record, when a dead
	// letter is re-queued. Claims hand out a record's events in Lane order.
	Lane             int64
	Status           Status
	RetryCount       int    // failed attempts so far; reset by a dead-letter requeue
	Attempt          int    // claims so far; the fencing value of the current lease
	ErrorMessage     string // last error
	NextAttemptDate  time.Time
	LeaseOwner       string
	LeaseExpiresDate *time.Time
	ProcessedDate    *time.Time
	CreatedDate      time.Time
	LastModifiedDate time.Time
}

// lease builds the Lease of the claim that handed out the event with this id.
func (q QueueState) lease(id string) Lease { return Lease{ID: id, Attempt: q.Attempt} }

// InboundEvent is a row of _System_IntegrationInbound: a change that arrived from
// an external platform.
type InboundEvent struct {
	ID             string
	Source         string // "hubspot"
	ExternalID     string // the object's id on the source platform
	ObjectType     string // "contacts", "companies", "deals", ...
	EventType      string // EventCreate, EventUpdate, ...
	Payload        json.RawMessage
	RawPayload     json.RawMessage // the event as received; nil stores NULL
	IdempotencyKey string          // unique; a duplicate enqueue is skipped
	QueueState
}

// Lease returns the lease of the claim that handed out this event.
func (e InboundEvent) Lease() Lease { return e.lease(e.ID) }

// OutboundEvent is a row of _System_IntegrationOutbound: a local change to push
// to an external platform.
type OutboundEvent struct {
	ID          string
	Destination string // "hubspot"
	ObjectType  string
	RecordID    string          // the local record id
	EventType   string          // EventCreate, EventUpdate or EventDelete
	Payload     json.RawMessage // snapshot after the change
	OldPayload  json.RawMessage // snapshot before the change; nil stores NULL (create)
	QueueState
}

// Lease returns the lease of the claim that handed out this event.
func (e OutboundEvent) Lease() Lease { return e.lease(e.ID) }

// InternalEvent is a row of _System_OutboxEvent: an internal record event for
// in-process subscribers.
type InternalEvent struct {
	ID         string
	EventType  string // EventRecordCreated, EventRecordUpdated, EventRecordDeleted
	ObjectType string
	RecordID   string
	Payload    json.RawMessage
	Metadata   json.RawMessage // e.g. {"sync_source":"hubspot"}; nil stores NULL
	QueueState
}

// Lease returns the lease of the claim that handed out this event.
func (e InternalEvent) Lease() Lease { return e.lease(e.ID) }

// EnqueueResult reports what an enqueue did.
type EnqueueResult struct {
	ID       string // the stored event's id (the existing one for a duplicate)
	Inserted bool   // false when the idempotency key was already present
}

// Event is the type set of queued events: the type parameter of Queue.
type Event interface {
	InboundEvent | OutboundEvent | InternalEvent
	// Lease returns the lease of the claim that handed out the event.
	Lease() Lease
	// Header returns what the event has in common with the events of the
	// other queues.
	Header() EventHeader
}

// EventHeader is what every queued event has, whichever queue holds it. Code
// that serves all three queues alike (operator tools, metrics, tests) reads
// events through it.
type EventHeader struct {
	ID        string
	Direction Direction
	// Key is the Source (inbound) or Destination (outbound); "" for internal events.
	Key        string
	ObjectType string
	// RecordID is the local record id (outbound, internal) or the external id
	// (inbound).
	RecordID  string
	EventType string
	Payload   json.RawMessage
	QueueState
}

// Header implements Event.
func (e InboundEvent) Header() EventHeader {
	return EventHeader{ID: e.ID, Direction: DirectionInbound, Key: e.Source, ObjectType: e.ObjectType,
		RecordID: e.ExternalID, EventType: e.EventType, Payload: e.Payload, QueueState: e.QueueState}
}

// Header implements Event.
func (e OutboundEvent) Header() EventHeader {
	return EventHeader{ID: e.ID, Direction: DirectionOutbound, Key: e.Destination, ObjectType: e.ObjectType,
		RecordID: e.RecordID, EventType: e.EventType, Payload: e.Payload, QueueState: e.QueueState}
}

// Header implements Event.
func (e InternalEvent) Header() EventHeader {
	return EventHeader{ID: e.ID, Direction: DirectionInternal, ObjectType: e.ObjectType,
		RecordID: e.RecordID, EventType: e.EventType, Payload: e.Payload, QueueState: e.QueueState}
}
