package apply

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

// MaxRedirectsDefault bounds the merges one change is redirected through (a
// merged id whose survivor was merged again, and so on).
const MaxRedirectsDefault = 8

// Guarded is an Applier over a RecordStore that keeps the rules every Applier
// needs when the source neither orders its events nor delivers them once:
//
// Monotonic guard: every (record, field) keeps the OccurredAt of the last value
// applied to it. A field whose change is not strictly newer is skipped and
// reported in Result.Stale, so replays and out-of-order deliveries are
// harmless.
//
// Tombstones: every inbound deletion and every merged-away external id leaves a
// Tombstone at OccurredAt, whether or not the id was ever linked:
//   - a create, update or restore of a deleted external id that is not strictly
//     newer than the deletion is stale and changes nothing; a newer one may
//     bring the record back, under the same local id, with fresh field clocks;
//   - a Delete not newer than the id's tombstone (a replay, or a late delivery
//     after a newer restore) is ignored, and so is one older than a source
//     change applied to the record (SeenClock: the object lived after it, a
//     restore whose change came first); so is the Delete of a merged-away id,
//     which must not reach the survivor.
//
// Local deletes: an application that deletes a linked record writes a
// TombstoneLocalDeleted for its external id. Every create or update of the id
// is then stale, whatever its OccurredAt (the source's edit may postdate the
// local delete and still predate the archive that delete causes), and a Delete
// is ignored; only a Restore newer than the tombstone removes it and brings the
// record back. A record deleted before it was linked (the create of its object
// was in flight) carries LocalDeletedClock instead: the first creation,
// update or merge into the object that finds it linked but deleted writes the
// TombstoneLocalDeleted the deletion could not; the creation or update is
// stale, and the merge deletes its merged records, as for any survivor
// deleted here.
//
// Merge redirects: a change of a merged-away external id that is not newer than
// the merge is stale (the merge already settled the survivor's values); a newer
// one is redirected to the surviving external id, as HubSpot answers a read of a
// merged id with the survivor, and applied to the survivor's record under its
// own guard, through at most MaxRedirects merges. It never creates a record for
// the merged-away id.
//
// Matching: the record linked to ch.ExternalID on ch.Source; else, for a
// create/update/restore/merge with MatchField and MatchValue, an unlinked
// record whose field equals the value (it is then linked; for a merge, to the
// merge's target, unless that is gone, before the merged records are
// re-pointed or deleted, so that they join it); else a new record, linked;
// but a Partial change creates none and fails with ErrUnlinked.
//
// Kinds: Delete deletes the linked record and advances its DeletedClock; the
// link and field clocks stay. PrivacyDelete does the same, whatever the clocks,
// and also removes all its field clocks. Merge re-points the merged ids' record
// to the survivor, or deletes it when the survivor has its own or is gone: deleted
// here (a TombstoneLocalDeleted of the survivor: its archive removes the merged
// object too), or at the source no earlier than the merge. A merged id with
// no link stands for the unlinked records that ch.MergedMatchValues find and
// whose write may have reached the source (UnrecordedWrites). A survivor merged
// into another object no earlier than the merge is followed to that object.
// Then it applies ch.Fields to the survivor like an update; a merge that
// leaves no record of the survivor here and carries no Fields makes none
// (Ignored): an empty record would only ever get the survivor's later
// partial changes. Restore behaves
// like create. Other kinds are ignored. A Partial change of a linked record
// that is deleted here fails with ErrUnlinked, like one of an unlinked id, so
// that the record comes back whole.
//
// Clocks are kept at microsecond precision (OccurredAt is truncated), which
// every supported database stores exactly.
type Guarded struct {
	// Store holds the records, their clocks, links and tombstones (required).
	Store RecordStore
	// MaxRedirects bounds merge redirects; 0 means MaxRedirectsDefault.
	MaxRedirects int
}

var _ FencedApplier = (*Guarded)(nil)

// Apply applies ch in one transaction of the store, under
// outbox.WithSyncSource(ctx, ch.Source), so the store's writes are not enqueued
// back to the source. A change without Source, ExternalID or OccurredAt, or one
// redirected through more than MaxRedirects merges, fails with an error
// matching ErrPermanent.
func (g *Guarded) Apply(ctx context.Context, ch Change) (Result, error) {
	return g.apply(ctx, ch, nil)
}

// ApplyFenced is Apply with fence run first in the store's transaction, on
// its SQLRecordTx.DBTX; a fence error rolls the change back. A RecordTx that
// is not a SQLRecordTx fails with ErrFenceUnsupported, before any write.
func (g *Guarded) ApplyFenced(ctx context.Context, ch Change, fence Fence) (Result, error) {
	return g.apply(ctx, ch, fence)
}

func (g *Guarded) apply(ctx context.Context, ch Change, fence Fence) (Result, error) {
	switch {
	case ch.Source == "":
		return Result{}, fmt.Errorf("%w: change %s has no Source", ErrPermanent, ch.EventID)
	case ch.ExternalID == "":
		return Result{}, fmt.Errorf("%w: change %s has no ExternalID", ErrPermanent, ch.EventID)
	case ch.OccurredAt.IsZero():
		return Result{}, fmt.Errorf("%w: change %s has no OccurredAt, which the monotonic guard needs", ErrPermanent, ch.EventID)
	}
	ctx = outbox.WithSyncSource(ctx, ch.Source)
	at := ch.OccurredAt.UTC().Truncate(time.Microsecond)
	var res Result
	err := g.Store.InTx(ctx, func(tx RecordTx) error {
		if fence != nil {
			sq, ok := tx.(SQLRecordTx)
			if !ok {
				return ErrFenceUnsupported
			}
			if err := fence(ctx, sq.DBTX()); err != nil {
				return err
			}
		}
		r := run{tx: tx, maxRedirects: cmp.Or(g.MaxRedirects, MaxRedirectsDefault)}
		var err error
		switch ch.Kind {
		case store.EventCreate, store.EventUpdate, store.EventRestore:
			res, err = r.upsert(ctx, ch, at)
		case store.EventDelete, store.EventPrivacyDelete:
			res, err = r.delete(ctx, ch, at)
		case store.EventMerge:
			res, err = r.merge(ctx, ch, at)
		default:
			res = Result{Outcome: Ignored}
		}
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("apply %s %s %s/%s: %w", ch.Source, ch.Kind, ch.ObjectType, ch.ExternalID, err)
	}
	return res, nil
}

// run applies one change inside one transaction.
type run struct {
	tx           RecordTx
	maxRedirects int
}

// resolve finds the local record of a change: by link, else by match field.
func (r run) resolve(ctx context.Context, ch Change) (id string, linked bool, err error) {
	id, linked, err = r.tx.LookupRecord(ctx, ch.Source, ch.ObjectType, ch.ExternalID)
	if err != nil || linked {
		return id, linked, err
	}
	if ch.MatchField == "" || ch.MatchValue == "" {
		return "", false, nil
	}
	id, ok, err := r.tx.MatchRecord(ctx, ch.Source, ch.ObjectType, ch.MatchField, ch.MatchValue)
	if err != nil || !ok {
		return "", false, err
	}
	return id, false, nil
}

// lockLinked finds the record linked to external id ext of ch's source and
// type, and locks it; exists is false for a linked record deleted here.
func (r run) lockLinked(ctx context.Context, ch Change, ext string) (id string, linked, exists bool, err error) {
	id, linked, err = r.tx.LookupRecord(ctx, ch.Source, ch.ObjectType, ext)
	if err == nil && linked {
		exists, err = r.tx.LockRecord(ctx, ch.ObjectType, id)
	}
	return id, linked, exists, err
}

// redirect judges a create, update or restore against the tombstones of its
// external id. It returns the change to apply, redirected to the survivor of
// newer merges, or stale when a deletion or merge not older than the change
// already settled it.
func (r run) redirect(ctx context.Context, ch Change, at time.Time) (_ Change, stale bool, err error) {
	for hops := 0; ; hops++ {
		tomb, ok, err := r.tx.Tombstone(ctx, ch.Source, ch.ObjectType, ch.ExternalID)
		if err != nil || !ok {
			return ch, false, err
		}
		if tomb.Kind == TombstoneLocalDeleted {
			// Deleted here: only a restore at the source after the delete
			// brings the id back, and then later changes apply again.
			if ch.Kind != store.EventRestore || !at.After(tomb.OccurredAt) {
				return ch, true, nil
			}
			return ch, false, r.tx.RemoveTombstone(ctx, ch.Source, ch.ObjectType, ch.ExternalID, at)
		}
		if !at.After(tomb.OccurredAt) {
			return ch, true, nil
		}
		if tomb.Kind != TombstoneMerged {
			return ch, false, nil // newer than the deletion: it may come back
		}
		if hops == r.maxRedirects {
			return ch, false, fmt.Errorf("%w: %s %s was merged through more than %d ids", ErrPermanent, ch.ObjectType, ch.ExternalID, r.maxRedirects)
		}
		ch.ExternalID = tomb.SurvivorID
	}
}

func (r run) upsert(ctx context.Context, ch Change, at time.Time) (Result, error) {
	ch, stale, err := r.redirect(ctx, ch, at)
	if err != nil {
		return Result{}, err
	}
	if stale {
		id, _, err := r.tx.LookupRecord(ctx, ch.Source, ch.ObjectType, ch.ExternalID)
		if err != nil {
			return Result{}, err
		}
		return Result{RecordID: id, Stale: keys(ch.Fields), Outcome: Stale}, nil
	}
	id, linked, err := r.resolve(ctx, ch)
	if err != nil {
		return Result{}, err
	}
	if id == "" {
		if ch.Partial {
			// Only the changed properties: a record made of them could take the
			// link of a record whose link is still being recorded (the object
			// was just created from it); the caller reads the whole object.
			return Result{}, fmt.Errorf("%w: %s %s", ErrUnlinked, ch.ObjectType, ch.ExternalID)
		}
		id = r.tx.NewRecordID()
		if err := r.tx.Link(ctx, ch.Source, ch.ObjectType, id, ch.ExternalID); err != nil {
			return Result{}, err
		}
		if err := r.create(ctx, ch.ObjectType, id, ch.Fields, at); err != nil {
			return Result{}, err
		}
		return Result{RecordID: id, Applied: keys(ch.Fields), Outcome: Created}, nil
	}
	if !linked {
		if err := r.tx.Link(ctx, ch.Source, ch.ObjectType, id, ch.ExternalID); err != nil {
			return Result{}, err
		}
		if !ch.Partial {
			// Matched by its id property (an object created in HubSpot
			// while the record's own write waits): HubSpot never had the
			// record's values, so a property it has no value for was never
			// set there, not cleared. Keep the local value; the record's
			// write sends it.
			ch.Fields = withoutNil(ch.Fields)
		}
	}
	// Lock the row first, then read the clocks, so a concurrent writer's clocks
	// are seen.
	exists, err := r.tx.LockRecord(ctx, ch.ObjectType, id)
	if err != nil {
		return Result{}, err
	}
	clocks, err := r.tx.Clocks(ctx, ch.ObjectType, id)
	if err != nil {
		return Result{}, err
	}
	if !exists {
		// Linked but deleted: only a change newer than the delete (or a restore)
		// brings it back, under the same id, with fresh field clocks.
		if tomb, ok := clocks[DeletedClock]; ok && ch.Kind != store.EventRestore && !at.After(tomb) {
			return Result{RecordID: id, Stale: keys(ch.Fields), Outcome: Stale}, nil
		}
		if ch.Kind != store.EventRestore {
			deletedHere, err := r.tombstoneLocalDelete(ctx, ch, ch.ExternalID, clocks)
			if err != nil {
				return Result{}, err
			}
			if deletedHere {
				return Result{RecordID: id, Stale: keys(ch.Fields), Outcome: Stale}, nil
			}
		}
		if ch.Partial {
			// The object lives again (restored; its restore is on its way),
			// and the record must come back whole, not as the changed
			// properties alone: the caller reads the whole object.
			return Result{}, fmt.Errorf("%w: %s %s is deleted here", ErrUnlinked, ch.ObjectType, ch.ExternalID)
		}
		if err := r.tx.ClearFieldClocks(ctx, ch.ObjectType, id); err != nil {
			return Result{}, err
		}
		if err := r.create(ctx, ch.ObjectType, id, ch.Fields, at); err != nil {
			return Result{}, err
		}
		return Result{RecordID: id, Applied: keys(ch.Fields), Outcome: Created}, nil
	}
	res, err := r.applyFields(ctx, ch.ObjectType, id, clocks, ch.Fields, at)
	if err != nil || res.Outcome != Updated {
		return res, err
	}
	if rs, ok := r.tx.(Resender); ok {
		if err := rs.Resend(ctx, ch.Source, ch.ObjectType, id, ch.ExternalID, res.Applied, at); err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

// tombstoneLocalDelete gives external id ext the TombstoneLocalDeleted that
// a local deletion could not, when clocks (of the record linked to ext, which
// does not exist here) say the record was deleted here and not brought back
// and deleted at the source since: its create was in flight, and the link came
// after the deletion looked for links to tombstone. A local deletion stands
// against every change of the object but a newer restore, as if the link had
// been there; the deletion's own event, queued after the create, archives
// the object.
func (r run) tombstoneLocalDelete(ctx context.Context, ch Change, ext string, clocks map[string]time.Time) (bool, error) {
	here, ok := clocks[LocalDeletedClock]
	if !ok || clocks[DeletedClock].After(here) {
		return false, nil
	}
	return true, r.tx.PutTombstone(ctx, ch.Source, ch.ObjectType, ext, Tombstone{Kind: TombstoneLocalDeleted, OccurredAt: here})
}

func (r run) create(ctx context.Context, objectType, id string, fields map[string]any, at time.Time) error {
	if err := r.tx.CreateRecord(ctx, objectType, id, fields); err != nil {
		return err
	}
	return r.tx.AdvanceClocks(ctx, objectType, id, append(keys(fields), SeenClock), at)
}

// applyFields applies the fields that are newer than their clocks: the
// monotonic guard.
func (r run) applyFields(ctx context.Context, objectType, id string, clocks map[string]time.Time, fields map[string]any, at time.Time) (Result, error) {
	res := Result{RecordID: id}
	patch := map[string]any{}
	for _, k := range keys(fields) {
		if c, ok := clocks[k]; ok && !at.After(c) {
			res.Stale = append(res.Stale, k)
			continue
		}
		res.Applied = append(res.Applied, k)
		patch[k] = fields[k]
	}
	if len(res.Applied) == 0 {
		res.Outcome = Ignored
		if len(res.Stale) > 0 {
			res.Outcome = Stale
		}
		return res, nil
	}
	if err := r.tx.UpdateRecord(ctx, objectType, id, patch); err != nil {
		return Result{}, err
	}
	if err := r.tx.AdvanceClocks(ctx, objectType, id, append(slices.Clone(res.Applied), SeenClock), at); err != nil {
		return Result{}, err
	}
	res.Outcome = Updated
	return res, nil
}

func (r run) delete(ctx context.Context, ch Change, at time.Time) (Result, error) {
	privacy := ch.Kind == store.EventPrivacyDelete
	tomb, tombstoned, err := r.tx.Tombstone(ctx, ch.Source, ch.ObjectType, ch.ExternalID)
	if err != nil {
		return Result{}, err
	}
	switch {
	case tombstoned && tomb.Kind == TombstoneMerged:
		// The id lives on as the survivor, whose record this must not delete.
		return Result{Outcome: Ignored}, nil
	case tombstoned && tomb.Kind == TombstoneLocalDeleted && !privacy:
		// Deleted here already (this is most likely the echo of our archive);
		// the local tombstone stays, stricter than a source deletion's.
		id, _, err := r.tx.LookupRecord(ctx, ch.Source, ch.ObjectType, ch.ExternalID)
		return Result{RecordID: id, Outcome: Ignored}, err
	case tombstoned && !privacy && !at.After(tomb.OccurredAt):
		// A replay, or a deletion older than a restore that came after it.
		id, _, err := r.tx.LookupRecord(ctx, ch.Source, ch.ObjectType, ch.ExternalID)
		return Result{RecordID: id, Outcome: Ignored}, err
	}
	id, linked, exists, err := r.lockLinked(ctx, ch, ch.ExternalID)
	if err != nil {
		return Result{}, err
	}
	if exists && !privacy {
		// A source change newer than the deletion was applied (SeenClock):
		// the object lived after it, so it was restored, and this deletion
		// arrived late (its delivery was retried). HubSpot changes no deleted
		// object. Field clocks cannot tell: a local edit moves them too.
		clocks, err := r.tx.Clocks(ctx, ch.ObjectType, id)
		if err != nil {
			return Result{}, err
		}
		if clocks[SeenClock].After(at) {
			return Result{RecordID: id, Outcome: Ignored}, nil
		}
	}
	// Even an id never linked gets its tombstone: its older create or update
	// may still be on its way.
	if err := r.tx.PutTombstone(ctx, ch.Source, ch.ObjectType, ch.ExternalID, Tombstone{Kind: TombstoneDeleted, OccurredAt: at}); err != nil {
		return Result{}, err
	}
	if !linked {
		return r.deleteUnrecorded(ctx, ch, at, privacy)
	}
	res := Result{RecordID: id, Outcome: Ignored}
	if exists {
		if err := r.tx.DeleteRecord(ctx, ch.ObjectType, id, privacy); err != nil {
			return Result{}, err
		}
		res.Outcome = Deleted
	} else if pf, ok := r.tx.(PrivacyForgetter); ok && privacy {
		// Deleted before (a deletion, then the privacy deletion): what the
		// record left outside its row goes now.
		if err := pf.ForgetRecord(ctx, ch.ObjectType, id); err != nil {
			return Result{}, err
		}
	}
	if err := r.tx.AdvanceClocks(ctx, ch.ObjectType, id, []string{DeletedClock}, at); err != nil {
		return Result{}, err
	}
	if privacy {
		if err := r.tx.ClearFieldClocks(ctx, ch.ObjectType, id); err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

// deleteUnrecorded applies the deletion of an id no record is linked to. The
// object may have been made by a record here whose create's answer was lost
// (its link unrecorded): the record with no link that has the object's id
// property value (ch's MatchField and MatchValue, read from the deleted
// object) is linked to the object and deleted as a linked one is, when
// UnrecordedCreates says its write may have made the object. Its write's
// retry then finds it deleted by the source (the outbound worker's
// goneAtSource) and does not make the object again. Without a match value,
// or such a record, nothing is deleted.
func (r run) deleteUnrecorded(ctx context.Context, ch Change, at time.Time, privacy bool) (Result, error) {
	uc, ok := r.tx.(UnrecordedCreates)
	if !ok || ch.MatchField == "" || ch.MatchValue == "" || ch.ObjectCreatedAt.IsZero() {
		return Result{Outcome: Ignored}, nil
	}
	id, ok, err := r.tx.MatchRecord(ctx, ch.Source, ch.ObjectType, ch.MatchField, ch.MatchValue)
	if err != nil || !ok {
		return Result{Outcome: Ignored}, err
	}
	exists, err := r.tx.LockRecord(ctx, ch.ObjectType, id)
	if err != nil || !exists {
		return Result{Outcome: Ignored}, err
	}
	made, err := uc.LinkMade(ctx, ch.Source, ch.ObjectType, id, ch.ExternalID, ch.ObjectCreatedAt, at)
	if err != nil || !made {
		return Result{Outcome: Ignored}, err
	}
	if err := r.tx.DeleteRecord(ctx, ch.ObjectType, id, privacy); err != nil {
		return Result{}, err
	}
	if err := r.tx.AdvanceClocks(ctx, ch.ObjectType, id, []string{DeletedClock}, at); err != nil {
		return Result{}, err
	}
	return Result{RecordID: id, Outcome: Deleted}, nil
}

func (r run) merge(ctx context.Context, ch Change, at time.Time) (Result, error) {
	target, gone, err := r.mergeTarget(ctx, ch, at)
	if err != nil {
		return Result{}, err
	}
	survivor, survivorLinked, survivorExists, err := r.lockLinked(ctx, ch, target)
	if err != nil {
		return Result{}, err
	}
	if !survivorLinked && !gone && ch.MatchField != "" && ch.MatchValue != "" {
		// No record is linked to the survivor, but an unlinked one has its id
		// property value: the object was made from that record (the
		// create's answer was lost, or its link is on its way), or the
		// record's own write would upsert onto it. That record is the
		// survivor's, so the merged records join it rather than taking its
		// object, and no second record is made of the survivor.
		id, ok, err := r.tx.MatchRecord(ctx, ch.Source, ch.ObjectType, ch.MatchField, ch.MatchValue)
		if err != nil {
			return Result{}, err
		}
		if ok {
			if err := r.tx.Link(ctx, ch.Source, ch.ObjectType, id, target); err != nil {
				return Result{}, err
			}
			if survivorExists, err = r.tx.LockRecord(ctx, ch.ObjectType, id); err != nil {
				return Result{}, err
			}
			survivor, survivorLinked = id, true
			// A property the read has no value for may be one a local
			// write set after the create and has not sent yet: keep the
			// record's value, which that write sends, as upsert does for a
			// matched record.
			ch.Fields = withoutNil(ch.Fields)
		}
	}
	var deletedHere bool
	if survivorLinked && !survivorExists && !gone {
		// The survivor's record was deleted here before its link was
		// stored: the deletion's archive removes the merged objects too, so
		// the merged records go with it rather than being re-pointed there.
		clocks, err := r.tx.Clocks(ctx, ch.ObjectType, survivor)
		if err != nil {
			return Result{}, err
		}
		if gone, err = r.tombstoneLocalDelete(ctx, ch, target, clocks); err != nil {
			return Result{}, err
		}
		deletedHere = gone && target == ch.ExternalID
	}
	tomb, tombstoned, err := r.tx.Tombstone(ctx, ch.Source, ch.ObjectType, ch.ExternalID)
	if err != nil {
		return Result{}, err
	}
	// A tombstone kept over the local deletion's (a newer one) stays too.
	survivorDeletedHere := deletedHere || tombstoned && tomb.Kind == TombstoneLocalDeleted
	// join makes merged record id the survivor's (re-points it to the
	// survivor's object) when the survivor has no record here and is not
	// gone, else deletes it.
	join := func(id string) error {
		exists, err := r.tx.LockRecord(ctx, ch.ObjectType, id)
		if err != nil || !exists {
			return err
		}
		if !survivorExists && !gone {
			// Re-point: the merged record becomes the survivor's local record.
			if mr, ok := r.tx.(MergeRecorder); ok {
				if err := mr.MergedAway(ctx, ch.ObjectType, id, id); err != nil {
					return err
				}
			}
			if survivorLinked {
				if err := r.tx.UnlinkExternal(ctx, ch.Source, ch.ObjectType, target); err != nil {
					return err
				}
			}
			if err := r.tx.Link(ctx, ch.Source, ch.ObjectType, id, target); err != nil {
				return err
			}
			survivor, survivorLinked, survivorExists = id, true, true
			return nil
		}
		if id == survivor {
			return nil
		}
		// The survivor has its own local record, or is gone: the merged one
		// goes.
		if mr, ok := r.tx.(MergeRecorder); ok && survivorExists {
			if err := mr.MergedAway(ctx, ch.ObjectType, id, survivor); err != nil {
				return err
			}
		}
		return r.tx.DeleteRecord(ctx, ch.ObjectType, id, false)
	}
	merged := slices.Clone(ch.MergedIDs)
	slices.Sort(merged) // a fixed lock order
	// Counted before this merge's tombstones redirect the merged ids.
	unlinked, err := r.unappliedMerged(ctx, ch)
	if err != nil {
		return Result{}, err
	}
	for _, ext := range slices.Compact(merged) {
		if ext == "" || ext == ch.ExternalID {
			continue
		}
		// Linked or not, the merged-away id is redirected from now on, so a
		// late change of it cannot create a record for it.
		if err := r.tx.PutTombstone(ctx, ch.Source, ch.ObjectType, ext, Tombstone{
			Kind: TombstoneMerged, SurvivorID: ch.ExternalID, OccurredAt: at,
		}); err != nil {
			return Result{}, err
		}
		id, ok, err := r.tx.LookupRecord(ctx, ch.Source, ch.ObjectType, ext)
		if err != nil {
			return Result{}, err
		}
		if !ok {
			unlinked++ // a merged id with no link
			continue
		}
		if err := r.tx.UnlinkExternal(ctx, ch.Source, ch.ObjectType, ext); err != nil {
			return Result{}, err
		}
		if err := join(id); err != nil {
			return Result{}, err
		}
	}
	if unlinked > 0 {
		// A merged id with no link may be an object created from a record
		// here whose create's answer was lost: the survivor keeps that
		// object's id property value (MergedMatchValues), which finds it.
		ids, err := r.unrecordedMerged(ctx, ch, unlinked)
		if err != nil {
			return Result{}, err
		}
		for _, id := range ids {
			if err := join(id); err != nil {
				return Result{}, err
			}
		}
	}
	// The survivor was live at the merge, so an older tombstone of it (it had
	// been merged away or deleted before) no longer stands; a local delete's
	// does, whatever its time: the merge may postdate the delete and still
	// predate the archive that delete causes (the merge's fields are then
	// stale, as any change of a locally deleted id).
	if !survivorDeletedHere {
		if err := r.tx.RemoveTombstone(ctx, ch.Source, ch.ObjectType, ch.ExternalID, at); err != nil {
			return Result{}, err
		}
	}
	if !survivorExists && len(ch.Fields) == 0 {
		// No object of the merge has a record here, and it carries no values
		// (the caller read none; the SyncWorker always reads): a record made of nothing,
		// linked to the survivor, would only ever get the properties its
		// later edits change. The survivor's next change, read whole for an
		// unlinked id, makes its record.
		return Result{Outcome: Ignored}, nil
	}
	res, err := r.upsert(ctx, ch, at)
	if err != nil {
		return Result{}, err
	}
	res.Outcome = Merged
	return res, nil
}

// unappliedMerged counts the ids of ch.SurvivorMergedIDs, beside its
// MergedIDs, that have no link and that a chain of merge tombstones leads
// from to a merged id of ch with no link: objects merged into that object
// before it was merged itself, whose merge, applied here, found no record
// either. Each may have been made by a record here whose create's answer
// was lost, like the merged id itself, so each widens how many such records
// the merge may take (unrecordedMerged). An id with no tombstone is not
// counted (merged before this application saw it, or its merge's webhook is
// still to come), nor one whose chain ends at a linked id: its merge took
// its record, if it had one. Counted before this merge's tombstones are
// written.
func (r run) unappliedMerged(ctx context.Context, ch Change) (int, error) {
	if len(ch.SurvivorMergedIDs) == 0 {
		return 0, nil
	}
	var unlinked []string // merged ids of ch with no link
	for _, ext := range ch.MergedIDs {
		if ext == "" || ext == ch.ExternalID {
			continue
		}
		_, ok, err := r.tx.LookupRecord(ctx, ch.Source, ch.ObjectType, ext)
		if err != nil {
			return 0, err
		}
		if !ok {
			unlinked = append(unlinked, ext)
		}
	}
	n := 0
	for _, ext := range ch.SurvivorMergedIDs {
		if len(unlinked) == 0 {
			break
		}
		if ext == "" || ext == ch.ExternalID || slices.Contains(ch.MergedIDs, ext) {
			continue
		}
		_, ok, err := r.tx.LookupRecord(ctx, ch.Source, ch.ObjectType, ext)
		if err != nil {
			return 0, err
		}
		if ok {
			continue
		}
		into, err := r.mergedInto(ctx, ch, ext, unlinked)
		if err != nil {
			return 0, err
		}
		if into {
			n++
		}
	}
	return n, nil
}

// mergedInto reports whether merge tombstones lead from ext to one of ids in
// at most maxRedirects hops.
func (r run) mergedInto(ctx context.Context, ch Change, ext string, ids []string) (bool, error) {
	for range r.maxRedirects + 1 {
		tomb, ok, err := r.tx.Tombstone(ctx, ch.Source, ch.ObjectType, ext)
		if err != nil || !ok || tomb.Kind != TombstoneMerged {
			return false, err
		}
		if slices.Contains(ids, tomb.SurvivorID) {
			return true, nil
		}
		ext = tomb.SurvivorID
	}
	return false, nil
}

// unrecordedMerged returns the records a merge with n merged ids that have
// no link takes as merged ones: unlinked records found by ch's
// MergedMatchValues whose write may have reached the source
// (UnrecordedWrites), in a fixed order. None when the RecordTx cannot tell,
// and none when more than n are found: the survivor's other emails (added by
// hand, or of older merges) then leave it unclear which records the merged
// objects were, and a record wrongly taken would be deleted.
func (r run) unrecordedMerged(ctx context.Context, ch Change, n int) ([]string, error) {
	uw, ok := r.tx.(UnrecordedWrites)
	if !ok || ch.MatchField == "" {
		return nil, nil
	}
	var out []string
	for _, v := range ch.MergedMatchValues {
		if v == "" {
			continue
		}
		id, ok, err := r.tx.MatchRecord(ctx, ch.Source, ch.ObjectType, ch.MatchField, v)
		if err != nil {
			return nil, err
		}
		if !ok || slices.Contains(out, id) {
			continue
		}
		written, err := uw.MayHaveWritten(ctx, ch.Source, ch.ObjectType, id)
		if err != nil {
			return nil, err
		}
		if written {
			out = append(out, id)
		}
	}
	if len(out) > n {
		return nil, nil
	}
	slices.Sort(out)
	return out, nil
}

// mergeTarget returns the external id whose record the merged records of ch
// join: ch's survivor, or, when a later merge took the survivor into another
// object (its webhook came first), that object, through at most MaxRedirects
// merges. gone reports a target that is deleted: here (a local delete, whose
// archive removes the merged object too, whatever its time), or at the source
// no earlier than this merge. The merged records then go with it: re-pointing
// one would leave a live record linked to a deleted object, which no later
// webhook would correct.
func (r run) mergeTarget(ctx context.Context, ch Change, at time.Time) (target string, gone bool, err error) {
	target = ch.ExternalID
	for hops := 0; ; hops++ {
		tomb, ok, err := r.tx.Tombstone(ctx, ch.Source, ch.ObjectType, target)
		switch {
		case err != nil || !ok:
			return target, false, err
		case tomb.Kind == TombstoneLocalDeleted:
			return target, true, nil
		case at.After(tomb.OccurredAt):
			return target, false, nil // the survivor lived again before this merge
		case tomb.Kind != TombstoneMerged:
			return target, true, nil
		case hops == r.maxRedirects:
			return "", false, fmt.Errorf("%w: %s %s was merged through more than %d ids", ErrPermanent, ch.ObjectType, ch.ExternalID, r.maxRedirects)
		}
		target = tomb.SurvivorID
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// withoutNil returns fields without its nil values.
func withoutNil(fields map[string]any) map[string]any {
	out := make(map[string]any, len(fields))
	for k, v := range fields {
		if v != nil {
			out[k] = v
		}
	}
	return out
}
