package sqlq

import (
	"github.com/hubsync/hubsync/store"
)

// tableData is what a query template is rendered with, once per queue.
type tableData struct {
	Table string
	Dir   store.Direction
	// Key is the column a claim filters on (Source, Destination), "" for internal.
	Key string
	// Record are the columns that make two events belong to one record.
	Record []string
	// OpenIndex is the index on the record key and Lane over unfinished
	// events (migrations 003, 012), which reads of a record's followers must use.
	OpenIndex string
	// Columns are selected and scanned in this order.
	Columns []string
	// Lock is the row-locking clause a template adds where it renders the data
	// through the locked function (set only there).
	Lock string
	// Followers is set where a template renders the data through the
	// withFollowers function: a claim that also leases its heads' followers.
	Followers bool
}

// queueDef binds a queue's table to its Go event type.
type queueDef[E any] struct {
	data tableData
	// targets returns scan destinations for data.Columns.
	targets func(e *E) []any
	// state returns the event's id and bookkeeping.
	state func(e *E) (string, *store.QueueState)
	// record returns the event's record key as one comparable value.
	record func(e *E) [3]string
}

func withState(cols ...string) []string { return append(cols, stateColumns...) }

var inboundDef = queueDef[store.InboundEvent]{
	data: tableData{
		Table:     "_System_IntegrationInbound",
		Dir:       store.DirectionInbound,
		Key:       "Source",
		Record:    []string{"Source", "ObjectType", "ExternalID"},
		OpenIndex: "idx_inbound_open",
		Columns:   withState("Id", "Source", "ExternalID", "ObjectType", "EventType", "Payload", "RawPayload", "IdempotencyKey"),
	},
	targets: func(e *store.InboundEvent) []any {
		return append([]any{&e.ID, &e.Source, &e.ExternalID, &e.ObjectType, &e.EventType,
			jsonCol{&e.Payload}, jsonCol{&e.RawPayload}, &e.IdempotencyKey}, stateTargets(&e.QueueState)...)
	},
	state:  func(e *store.InboundEvent) (string, *store.QueueState) { return e.ID, &e.QueueState },
	record: func(e *store.InboundEvent) [3]string { return [3]string{e.Source, e.ObjectType, e.ExternalID} },
}

var outboundDef = queueDef[store.OutboundEvent]{
	data: tableData{
		Table:     "_System_IntegrationOutbound",
		Dir:       store.DirectionOutbound,
		Key:       "Destination",
		Record:    []string{"Destination", "ObjectType", "RecordID"},
		OpenIndex: "idx_outbound_open",
		Columns:   withState("Id", "Destination", "ObjectType", "RecordID", "EventType", "Payload", "OldPayload"),
	},
	targets: func(e *store.OutboundEvent) []any {
		return append([]any{&e.ID, &e.Destination, &e.ObjectType, &e.RecordID, &e.EventType,
			jsonCol{&e.Payload}, jsonCol{&e.OldPayload}}, stateTargets(&e.QueueState)...)
	},
	state:  func(e *store.OutboundEvent) (string, *store.QueueState) { return e.ID, &e.QueueState },
	record: func(e *store.OutboundEvent) [3]string { return [3]string{e.Destination, e.ObjectType, e.RecordID} },
}

var internalDef = queueDef[store.InternalEvent]{
	data: tableData{
		Table:     "_System_OutboxEvent",
		Dir:       store.DirectionInternal,
		Record:    []string{"ObjectType", "RecordID"},
		OpenIndex: "idx_outboxevent_open",
		Columns:   withState("Id", "EventType", "ObjectType", "RecordID", "Payload", "Metadata"),
	},
	targets: func(e *store.InternalEvent) []any {
		return append([]any{&e.ID, &e.EventType, &e.ObjectType, &e.RecordID,
			jsonCol{&e.Payload}, jsonCol{&e.Metadata}}, stateTargets(&e.QueueState)...)
	},
	state:  func(e *store.InternalEvent) (string, *store.QueueState) { return e.ID, &e.QueueState },
	record: func(e *store.InternalEvent) [3]string { return [3]string{"", e.ObjectType, e.RecordID} },
}
