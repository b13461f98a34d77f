package inbound

import (
	"context"
	"errors"
	"time"
)

// Change is one inbound change, already mapped to local field names, for an
// Applier to apply to the application's records.
type Change struct {
	// EventID is the inbound event's id (_System_IntegrationInbound.Id), for tracing.
	EventID string
	// Source is the platform the change came from, e.g. "hubspot".
	Source string
	// ObjectType is the local object type, e.g. "contacts".
	ObjectType string
	// ExternalID is the object's id on the source platform.
	ExternalID string
	// Kind is store.EventCreate, EventUpdate, EventDelete, EventMerge,
	// EventRestore or EventPrivacyDelete.
	Kind string
	// Fields are the changed local fields. A nil value removes the field.
	Fields map[string]any
	// OccurredAt is when the change happened at the source. The Applier keeps,
	// per record and field, the OccurredAt of the last applied value and skips a
	// field whose change is not newer (the monotonic guard).
	OccurredAt time.Time
	// MatchField and MatchValue, when set, let the Applier link a record that has
	// no external id yet by a unique field (for contacts: "email").
	MatchField string
	MatchValue string
	// MergedIDs are, for EventMerge, the external ids merged into ExternalID,
	// which survives.
	MergedIDs []string
}

// Result reports what an Applier did with a Change.
type Result struct {
	// RecordID is the local record's id ("" when none exists or was created).
	RecordID string
	// Applied lists the fields written.
	Applied []string
	// Stale lists the fields skipped because a newer change was already applied.
	Stale []string
	// Outcome is a short word for logs and metrics: "created", "updated",
	// "deleted", "merged", "stale", "ignored".
	Outcome string
}

// ErrPermanent marks an Applier error that retrying cannot fix (for example a
// validation error). The SyncWorker dead-letters such an event at once.
var ErrPermanent = errors.New("inbound: permanent apply error")

// Applier applies inbound changes to the application's records. hubsync's own
// records service implements it; an application with its own schema can too.
//
// Apply is called with a context marked by outbox.WithSyncSource(ctx, Source),
// so the write must not enqueue an outbound event back to Source. Each call must
// be atomic: the record change and its guard state commit together. It must be
// idempotent: applying the same Change twice leaves the same state.
type Applier interface {
	Apply(ctx context.Context, ch Change) (Result, error)
}
