package apply

import (
	"context"
	"errors"
	"time"

	"github.com/hubsync/hubsync/store"
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
	// no external id yet by a unique field (for contacts: "email"). For a
	// deletion of an external id no record is linked to, they are the
	// deleted object's value (inbound reads it: UnknownIDs), with
	// ObjectCreatedAt: the record with no link that has it, and whose write
	// may have made that object (UnrecordedCreates), is deleted.
	MatchField string
	MatchValue string
	// Partial marks Fields as only the properties that changed (a HubSpot
	// propertyChange), not the whole object. A record is never created from
	// them: when no local record is linked to ExternalID (nor found by
	// MatchField), or the linked one is deleted here (the object was restored
	// at the source), the Applier fails with ErrUnlinked, and the caller reads
	// the whole object and applies it with MatchField and MatchValue set. The
	// object may be one this application just created at the source and whose
	// link it has not recorded yet; a record made of the changed properties
	// alone would take that link from the record the object belongs to.
	Partial bool
	// ObjectCreatedAt is, for a deletion read as above, when the deleted
	// object was created at the source: a record created here after it
	// cannot have made it.
	ObjectCreatedAt time.Time
	// MergedIDs are, for EventMerge, the external ids merged into ExternalID,
	// which survives.
	MergedIDs []string
	// MergedMatchValues are, for EventMerge, MatchField values the survivor
	// keeps from the objects merged into it (a contact's
	// hs_additional_emails). A merged id with no link may be an object this
	// application created whose link is unrecorded (its create's answer was
	// lost): its record is the unlinked one with such a value, if the
	// RecordTx says its write may have reached the source
	// (UnrecordedWrites), and it joins the survivor as a linked merged
	// record does.
	MergedMatchValues []string
	// SurvivorMergedIDs are, for EventMerge, the ids the survivor lists as
	// merged into it (hs_merged_object_ids), this merge's and earlier ones',
	// and those merged into a merged id before it was merged itself. One
	// with no link whose earlier merge into a merged id with no link was
	// applied here (finding no record either) is one more object a record
	// with an unrecorded link may have become: the merge may then take one
	// more record found by MergedMatchValues.
	SurvivorMergedIDs []string
}

// Outcome says in one word what an Applier did with a Change, for logs and
// metrics labels.
type Outcome string

// Outcomes of Apply (Result.Outcome).
const (
	// Created: a local record was created (or a deleted one brought back).
	Created Outcome = "created"
	// Updated: at least one field was applied to an existing record.
	Updated Outcome = "updated"
	// Deleted: the local record was deleted.
	Deleted Outcome = "deleted"
	// Merged: the merge was applied to the survivor's record.
	Merged Outcome = "merged"
	// Stale: nothing was applied because a newer change (or a deletion or merge
	// not older than the change) had already settled it.
	Stale Outcome = "stale"
	// Ignored: there was nothing to apply (a replayed delete, an unknown kind, a
	// change of no fields).
	Ignored Outcome = "ignored"
)

// Result reports what an Applier did with a Change.
type Result struct {
	// RecordID is the local record's id ("" when none exists or was created).
	RecordID string
	// Applied lists the fields written.
	Applied []string
	// Stale lists the fields skipped because a newer change was already applied.
	Stale []string
	// Outcome says what happened, for logs and metrics.
	Outcome Outcome
}

// ErrUnlinked is returned by Apply for a Partial change of an external id
// that no local record is linked to, or whose linked record is deleted: the
// change must be applied again with the whole object (and
// MatchField/MatchValue) read from the source.
var ErrUnlinked = errors.New("apply: no local record is linked to the external id")

// ErrPermanent marks an Applier error that retrying cannot fix (for example a
// validation error). The SyncWorker dead-letters such an event at once.
var ErrPermanent = errors.New("apply: permanent apply error")

// Applier applies inbound changes to the application's records. hubsync's own
// records service implements it; an application with its own schema can too,
// most simply with Guarded over its own RecordStore, which brings the monotonic
// guard, tombstones and merge redirects.
//
// Apply is called with a context marked by outbox.WithSyncSource(ctx, Source),
// so the write must not enqueue an outbound event back to Source. Each call must
// be atomic: the record change and its guard state commit together. It must be
// idempotent: applying the same Change twice leaves the same state.
type Applier interface {
	Apply(ctx context.Context, ch Change) (Result, error)
}

// Fence is run by a FencedApplier inside the transaction that applies a
// change, before any of its writes, with that transaction. The SyncWorker's
// fence completes the inbound event under its lease
// (store.LeaseOps.CompleteTx): it fails with store.ErrLeaseLost when another
// worker took the event over, and the Applier must then roll back, so a worker
// that lost its lease changes nothing. It runs once per transaction: again when
// the Applier runs a transaction the database rolled back (a deadlock) again.
type Fence func(ctx context.Context, tx store.DBTX) error

// FencedApplier is an Applier that can run a Fence in the transaction that
// applies a change, on the database of the inbound queue, making
// apply-and-complete one transaction. records.Service and Guarded (over a
// RecordTx that implements SQLRecordTx) are FencedAppliers.
type FencedApplier interface {
	Applier
	// ApplyFenced is Apply with fence run first inside the transaction; an
	// error of fence rolls everything back and is returned (wrapped). When the
	// Applier cannot run fence in its transaction it returns an error matching
	// ErrFenceUnsupported and writes nothing.
	ApplyFenced(ctx context.Context, ch Change, fence Fence) (Result, error)
}

// ErrFenceUnsupported is returned by ApplyFenced when the Applier has no SQL
// transaction to run the fence in (for Guarded: a RecordTx that does not
// implement SQLRecordTx). The SyncWorker then applies unfenced, as before.
var ErrFenceUnsupported = errors.New("apply: the applier cannot run a fence in its transaction")
