package apply

import (
	"context"
	"time"

	"github.com/hubsync/hubsync/store"
)

// DeletedClock is the name of the clock that records when a record was deleted
// (inbound or local). It lives beside the field clocks, and field names must
// not start with "$", so it cannot clash with a field.
const DeletedClock = "$deleted"

// LocalDeletedClock records when the application deleted a record (a local
// deletion; DeletedClock moves too). A record deleted while the create of
// its object was in flight is linked to that object after the deletion
// looked for links to tombstone; a source creation, update or merge into
// the object that then finds it linked but deleted, its last deletion a local
// one, tombstones the object as the deletion would have
// (TombstoneLocalDeleted): a creation or update is stale, and a merge's
// merged records are deleted, since the deletion's archive removes their
// objects too. Cleared, as the field clocks, when the record comes back.
const LocalDeletedClock = "$deleted_here"

// SeenClock is the clock of the newest source change applied to a record
// (created, updated, restored or merged into): the object lived at the
// source then. Local edits move the field clocks but never this one, so a
// source deletion older than it (a delivery retried after the object was
// restored) is known to be stale.
const SeenClock = "$seen"

// Kinds of Tombstone.
const (
	// TombstoneDeleted marks an external id deleted at its source.
	TombstoneDeleted = "deleted"
	// TombstoneMerged marks an external id merged into another (SurvivorID).
	TombstoneMerged = "merged"
	// TombstoneLocalDeleted marks an external id whose local record was
	// deleted by the application, at the local clock's OccurredAt. The delete
	// archives the object at the source later, so a source edit made before the
	// archive may carry a time after the local delete: every change of the id
	// is stale, whatever its time, until a source restore newer than the
	// tombstone. The application writes it when it deletes a linked record.
	TombstoneLocalDeleted = "local_deleted"
)

// Tombstone records that an external id was deleted or merged away at its
// source (or its record deleted locally), and when. Sources do not order their events, so a change of the id
// older than the tombstone may still arrive; Guarded judges it against the
// tombstone instead of creating the record again.
type Tombstone struct {
	// Kind is TombstoneDeleted, TombstoneMerged or TombstoneLocalDeleted.
	Kind string
	// SurvivorID is, for TombstoneMerged, the external id the id was merged
	// into; "" otherwise.
	SurvivorID string
	// OccurredAt is the source's time of the deletion or merge.
	OccurredAt time.Time
}

// RecordStore is what Guarded needs from an application's tables to apply
// changes correctly. See the package documentation for how to implement it.
type RecordStore interface {
	// InTx runs fn in one database transaction and commits it when fn returns
	// nil; otherwise it rolls back and returns fn's error. Guarded applies one
	// Change per call, so the record, its clocks, links and tombstones change
	// together or not at all. Errors that retrying cannot fix should match
	// ErrPermanent. InTx may run fn again, in a new transaction, after the
	// database rolled the last one back as transient (a deadlock:
	// records.Service does), so fn starts from fresh state on every run.
	InTx(ctx context.Context, fn func(tx RecordTx) error) error
}

// RecordTx is one transaction of a RecordStore. Every method works inside it.
// source, objectType and externalID name an object on the source platform
// (Change.Source, Change.ObjectType, Change.ExternalID); id is a local record
// id.
type RecordTx interface {
	// LookupRecord returns the local record linked to an external id; ok is
	// false when none is.
	LookupRecord(ctx context.Context, source, objectType, externalID string) (id string, ok bool, err error)
	// MatchRecord returns a record of objectType that is linked to nothing on
	// source and whose field equals value (for contacts: the email); ok is
	// false when there is none. field "$id" (mapping.RecordIDField) matches the
	// record whose id is value: the external object carries the local id.
	MatchRecord(ctx context.Context, source, objectType, field, value string) (id string, ok bool, err error)
	// Link links a local record to an external id.
	Link(ctx context.Context, source, objectType, id, externalID string) error
	// UnlinkExternal removes the link of an external id (none is not an error).
	UnlinkExternal(ctx context.Context, source, objectType, externalID string) error
	// NewRecordID returns the id of a record about to be created.
	NewRecordID() string

	// Tombstone returns the tombstone of an external id; ok is false when it
	// has none.
	Tombstone(ctx context.Context, source, objectType, externalID string) (t Tombstone, ok bool, err error)
	// PutTombstone writes the tombstone of an external id, replacing an older
	// one; it must not replace one with a later OccurredAt.
	PutTombstone(ctx context.Context, source, objectType, externalID string, t Tombstone) error
	// RemoveTombstone removes the tombstone of an external id if it is older
	// than before (none is not an error).
	RemoveTombstone(ctx context.Context, source, objectType, externalID string, before time.Time) error

	// LockRecord locks a record for the rest of the transaction (SELECT … FOR
	// UPDATE) and reports whether it exists. Guarded reads clocks only after
	// the lock, so a concurrent writer's clocks are seen.
	LockRecord(ctx context.Context, objectType, id string) (exists bool, err error)
	// Clocks returns the clocks of a record: per field the OccurredAt of its
	// last applied value, and DeletedClock when the record was deleted.
	Clocks(ctx context.Context, objectType, id string) (map[string]time.Time, error)
	// AdvanceClocks sets the clocks of names to at, never moving one backwards.
	AdvanceClocks(ctx context.Context, objectType, id string, names []string, at time.Time) error
	// ClearFieldClocks removes every clock of a record except DeletedClock.
	ClearFieldClocks(ctx context.Context, objectType, id string) error
	// CreateRecord inserts a record with fields (nil values are dropped).
	CreateRecord(ctx context.Context, objectType, id string, fields map[string]any) error
	// UpdateRecord merges patch into a locked record's fields (a nil value
	// removes the field).
	UpdateRecord(ctx context.Context, objectType, id string, patch map[string]any) error
	// DeleteRecord deletes a locked record. A privacy delete (GDPR) must keep
	// no field values anywhere it writes, such as outbound events.
	DeleteRecord(ctx context.Context, objectType, id string, privacy bool) error
}

// SQLRecordTx is a RecordTx that runs on a SQL transaction of the inbound
// queue's database. Guarded.ApplyFenced runs its Fence on that transaction, so
// the change and the completion of its inbound event commit together.
type SQLRecordTx interface {
	RecordTx
	// DBTX returns the transaction the RecordTx writes through.
	DBTX() store.DBTX
}

// MergeRecorder is a RecordTx that keeps what a merge leaves on the survivor
// of a record it deletes or re-points: MergedAway is called, in the merge's
// transaction, before the record mergedID, merged into the object whose
// local record is survivorID, is deleted; or, with survivorID == mergedID,
// before it is re-pointed to a survivor without a local record (the merge's
// fields may then replace its email). HubSpot keeps the merged object's
// email on the survivor (hs_additional_emails), so an upsert by that email
// would write over the survivor: the records service keeps it as held by the
// survivor's record.
type MergeRecorder interface {
	MergedAway(ctx context.Context, objectType, mergedID, survivorID string) error
}

// UnrecordedWrites is a RecordTx that knows the writes of its records to the
// source: MayHaveWritten reports whether a write of record id may have
// reached the source without its answer being recorded (a change of the
// record for it was handed to a worker at least once and is unfinished, so
// a call of it may have been made and its answer lost, or may be under way;
// or it was dead-lettered: a retry that the source resolved to a merge's
// survivor fails as a link conflict). A merge takes an unlinked
// record found by one of its MergedMatchValues as a merged record only when
// this says so, never a record that the source cannot have seen. (A call
// under way then lands on the survivor; the outbound worker writes the
// survivor's record over it again: outbound.OverwriteRepairer.)
type UnrecordedWrites interface {
	MayHaveWritten(ctx context.Context, source, objectType, id string) (bool, error)
}

// UnrecordedCreates is a RecordTx that links a record to an object the
// source deleted when a write of the record may have made that object, its
// answer lost (LinkMade): an unfinished write of it was handed to a worker
// (a dead-lettered one, most often the source's refusal, does not count),
// the record existed by then (allowing for clock skew, its creation here no
// later than createdAt, the object's, plus a minute), no write of it was in
// a worker's hands since deletedAt (one may have made another object, which
// nothing here finds: the record then stays, and its retry finds that
// object by its id property), no worker can claim one before the change
// commits, and it has no link now, read after LockRecord (a link the
// write's retry stored meanwhile says the write was recorded; one stored
// concurrently makes the link fail, and the change is retried). It reports
// whether it linked. A deletion of an object no record is linked to deletes
// the record it links, which is then a record HubSpot deleted like any
// linked one (a later privacy deletion or restore of the object finds it);
// without UnrecordedCreates, none.
type UnrecordedCreates interface {
	LinkMade(ctx context.Context, source, objectType, id, externalID string, createdAt, deletedAt time.Time) (bool, error)
}

// UnknownIDs is an Applier that tells which external ids it knows nothing
// of: no record is linked to them and no tombstone is kept. The SyncWorker
// asks before it applies deletions (inbound.Worker): the deleted object of
// such an id may be one a record here created whose create's answer was
// lost, so the worker reads the deleted object's id property value (its
// email, or the record id hubsync wrote on it) and sets the deletion's
// MatchField and MatchValue, by which the Applier finds that record
// (UnrecordedCreates).
type UnknownIDs interface {
	UnknownIDs(ctx context.Context, source, objectType string, externalIDs []string) ([]string, error)
}

// PrivacyForgetter is a RecordTx that keeps values of a record outside its
// row (states pushed to HubSpot, emails it holds): ForgetRecord is called, in
// the privacy deletion's transaction, for a linked record deleted before the
// privacy deletion came (DeleteRecord with privacy forgets them for a live
// one).
type PrivacyForgetter interface {
	ForgetRecord(ctx context.Context, objectType, id string) error
}

// Resender is a RecordTx that writes to the source as well (an outbound
// worker sends local changes to it). Guarded calls Resend, in the change's
// transaction, after it applied fields of a source change to an existing
// record (its UpdateRecord), with the change's source, external id and
// time: a write of the record's to the source that was queued or in flight
// then, or that was recorded as accepted after at, may have overwritten
// those fields there with older local values (the source keeps the last write it receives; the
// guard here kept the newer change). Resend then sends the applied values
// back to the source, after that write, so both sides end with the newer
// change.
type Resender interface {
	Resend(ctx context.Context, source, objectType, id, externalID string, fields []string, at time.Time) error
}
