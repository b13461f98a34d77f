package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

var _ inbound.Applier = (*Service)(nil)

// Outcomes of Apply (inbound.Result.Outcome).
const (
	OutcomeCreated = "created"
	OutcomeUpdated = "updated"
	OutcomeDeleted = "deleted"
	OutcomeMerged  = "merged"
	OutcomeStale   = "stale"
	OutcomeIgnored = "ignored"
)

// Apply applies one inbound change in one transaction, under
// outbox.WithSyncSource(ctx, ch.Source), so nothing is enqueued back to the
// source while other destinations and the internal queue still get events.
//
// Matching: the record linked to ch.ExternalID on ch.Source; else, for a
// create/update/restore with MatchField and MatchValue, an unlinked record whose
// field equals the value (it is then linked); else a new record, linked.
//
// Monotonic guard: every (record, field) keeps the OccurredAt of the last value
// applied to it, and local writes advance it to the store clock's now. A field
// whose change is not strictly newer is skipped and reported in Result.Stale, so
// replays and out-of-order deliveries are harmless. A change whose values equal
// the record's writes no new version and no events.
//
// Tombstones: every inbound deletion and every merged-away external id leaves a
// links.Tombstone at OccurredAt, whether or not the id was ever linked, since
// the source does not order events (not even of one object across deliveries,
// nor of different objects against each other):
//   - a create, update or restore of a deleted external id that is not strictly
//     newer than the deletion is stale and changes nothing; a newer one may
//     bring the record back (below);
//   - a change of a merged-away external id that is not newer than the merge is
//     stale (the merge already settled the survivor's values); a newer one is
//     redirected to the surviving external id, as HubSpot answers a read of a
//     merged id with the survivor, and applied to the survivor's record under
//     its own guard (through at most maxRedirects merges). It never creates a
//     record for the merged-away id.
//
// Policy for the other kinds:
//   - Delete deletes the linked local record and writes a tombstone clock at
//     OccurredAt; the link and the field clocks stay. A create or update that is
//     not newer than the deletion is stale instead of resurrecting the record.
//     A newer one (or a Restore newer than an inbound deletion) recreates it under
//     the same local id. A Delete not newer than the id's tombstone (a replay, or
//     a late delivery after a newer restore) is ignored; so is the Delete of a
//     merged-away id, which must not reach the survivor.
//   - PrivacyDelete (GDPR) deletes the record like Delete, but its events carry
//     no field values and all its field clocks except the tombstone are removed.
//   - Merge: for each merged external id, the linked local record is re-pointed
//     to the surviving external id, unless the survivor already has a local
//     record: then the merged one's local record is deleted and its link removed.
//     ch.Fields are then applied to the survivor like an update.
//   - Restore behaves like create.
//   - Association and unknown kinds are ignored.
//
// Invalid changes fail with an error matching inbound.ErrPermanent.
func (s *Service) Apply(ctx context.Context, ch inbound.Change) (inbound.Result, error) {
	if err := s.checkChange(ch); err != nil {
		return inbound.Result{}, fmt.Errorf("%w: %w", inbound.ErrPermanent, err)
	}
	ctx = outbox.WithSyncSource(ctx, ch.Source)
	at := ch.OccurredAt.UTC().Truncate(time.Microsecond) // the clocks' precision
	var res inbound.Result
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		switch ch.Kind {
		case store.EventCreate, store.EventUpdate, store.EventRestore:
			res, err = s.upsertTx(ctx, tx, ch, at)
		case store.EventDelete, store.EventPrivacyDelete:
			res, err = s.deleteInboundTx(ctx, tx, ch, at)
		case store.EventMerge:
			res, err = s.mergeTx(ctx, tx, ch, at)
		default:
			res = inbound.Result{Outcome: OutcomeIgnored}
		}
		return err
	})
	if err != nil {
		if errors.Is(err, ErrInvalid) || errors.Is(err, ErrTooLarge) {
			err = fmt.Errorf("%w: %w", inbound.ErrPermanent, err)
		}
		return inbound.Result{}, fmt.Errorf("records: apply %s %s %s/%s: %w", ch.Source, ch.Kind, ch.ObjectType, ch.ExternalID, err)
	}
	return res, nil
}

func (s *Service) checkChange(ch inbound.Change) error {
	if err := s.checkType(ch.ObjectType); err != nil {
		return err
	}
	switch {
	case ch.Source == "":
		return fmt.Errorf("%w: change %s has no Source", ErrInvalid, ch.EventID)
	case ch.ExternalID == "":
		return fmt.Errorf("%w: change %s has no ExternalID", ErrInvalid, ch.EventID)
	case ch.OccurredAt.IsZero():
		return fmt.Errorf("%w: change %s has no OccurredAt, which the monotonic guard needs", ErrInvalid, ch.EventID)
	case ch.MatchField != "" && !matchFieldRE.MatchString(ch.MatchField):
		return fmt.Errorf("%w: match field %q; use letters, digits and _", ErrInvalid, ch.MatchField)
	}
	return s.checkNames(ch.Fields)
}

// resolveTx finds the local record of a change: by link, else by match field.
func (s *Service) resolveTx(ctx context.Context, tx *sql.Tx, ch inbound.Change) (id string, linked bool, err error) {
	id, linked, err = s.links.LookupRecordTx(ctx, tx, ch.Source, ch.ObjectType, ch.ExternalID)
	if err != nil || linked {
		return id, linked, err
	}
	if ch.MatchField == "" || ch.MatchValue == "" {
		return "", false, nil
	}
	err = tx.QueryRowContext(ctx, s.q.Get("record_find_unlinked"), ch.ObjectType, ch.MatchField, ch.MatchValue, ch.Source).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("match %s by %s: %w", ch.ObjectType, ch.MatchField, err)
	}
	return id, false, nil
}

// maxRedirects bounds the merges one change is redirected through (a merged id
// whose survivor was merged again, and so on).
const maxRedirects = 8

// tombstoneTx judges a create, update or restore against the tombstones of its
// external id. It returns the change to apply, redirected to the survivor of
// newer merges, or stale when a deletion or merge not older than the change
// already settled it.
func (s *Service) tombstoneTx(ctx context.Context, tx *sql.Tx, ch inbound.Change, at time.Time) (_ inbound.Change, stale bool, err error) {
	for hops := 0; ; hops++ {
		tomb, ok, err := s.links.TombstoneTx(ctx, tx, ch.Source, ch.ObjectType, ch.ExternalID)
		if err != nil || !ok {
			return ch, false, err
		}
		if !at.After(tomb.OccurredAt) {
			return ch, true, nil
		}
		if tomb.Kind != links.TombstoneMerged {
			return ch, false, nil // newer than the deletion: it may come back
		}
		if hops == maxRedirects {
			return ch, false, fmt.Errorf("%w: %s %s was merged through more than %d ids", ErrInvalid, ch.ObjectType, ch.ExternalID, maxRedirects)
		}
		ch.ExternalID = tomb.SurvivorID
	}
}

func (s *Service) upsertTx(ctx context.Context, tx *sql.Tx, ch inbound.Change, at time.Time) (inbound.Result, error) {
	ch, stale, err := s.tombstoneTx(ctx, tx, ch, at)
	if err != nil {
		return inbound.Result{}, err
	}
	if stale {
		id, _, err := s.links.LookupRecordTx(ctx, tx, ch.Source, ch.ObjectType, ch.ExternalID)
		if err != nil {
			return inbound.Result{}, err
		}
		return inbound.Result{RecordID: id, Stale: keys(ch.Fields), Outcome: OutcomeStale}, nil
	}
	id, linked, err := s.resolveTx(ctx, tx, ch)
	if err != nil {
		return inbound.Result{}, err
	}
	if id == "" {
		id = newID()
		if err := s.links.LinkTx(ctx, tx, ch.Source, ch.ObjectType, id, ch.ExternalID); err != nil {
			return inbound.Result{}, err
		}
		rec, err := s.createTx(ctx, tx, ch.ObjectType, id, ch.Fields, at)
		if err != nil {
			return inbound.Result{}, err
		}
		return inbound.Result{RecordID: rec.ID, Applied: keys(ch.Fields), Outcome: OutcomeCreated}, nil
	}
	if !linked {
		if err := s.links.LinkTx(ctx, tx, ch.Source, ch.ObjectType, id, ch.ExternalID); err != nil {
			return inbound.Result{}, err
		}
	}
	// Lock the row first, then read the clocks, so a concurrent writer's clocks
	// are seen.
	rec, err := s.get(ctx, tx, "record_get_for_update", ch.ObjectType, id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return inbound.Result{}, err
	}
	clocks, cerr := s.clocks(ctx, tx, ch.ObjectType, id)
	if cerr != nil {
		return inbound.Result{}, cerr
	}
	if errors.Is(err, ErrNotFound) {
		// Linked but deleted: only a change newer than the delete (or a restore)
		// brings it back, under the same id, with fresh field clocks.
		if tomb, ok := clocks[tombstoneField]; ok && ch.Kind != store.EventRestore && !at.After(tomb) {
			return inbound.Result{RecordID: id, Stale: keys(ch.Fields), Outcome: OutcomeStale}, nil
		}
		if _, err := tx.ExecContext(ctx, s.q.Get("clock_delete_fields"), ch.ObjectType, id); err != nil {
			return inbound.Result{}, fmt.Errorf("clear field clocks of %s/%s: %w", ch.ObjectType, id, err)
		}
		if _, err := s.createTx(ctx, tx, ch.ObjectType, id, ch.Fields, at); err != nil {
			return inbound.Result{}, err
		}
		return inbound.Result{RecordID: id, Applied: keys(ch.Fields), Outcome: OutcomeCreated}, nil
	}
	return s.applyFieldsTx(ctx, tx, rec, clocks, ch.Fields, at)
}

// applyFieldsTx applies the fields that are newer than their clocks.
func (s *Service) applyFieldsTx(ctx context.Context, tx *sql.Tx, rec Record, clocks map[string]time.Time, fields map[string]any, at time.Time) (inbound.Result, error) {
	res := inbound.Result{RecordID: rec.ID}
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
		res.Outcome = OutcomeIgnored
		if len(res.Stale) > 0 {
			res.Outcome = OutcomeStale
		}
		return res, nil
	}
	if _, err := s.updateTx(ctx, tx, rec, patch); err != nil {
		return inbound.Result{}, err
	}
	if err := s.touchClocks(ctx, tx, rec.ObjectType, rec.ID, res.Applied, at); err != nil {
		return inbound.Result{}, err
	}
	res.Outcome = OutcomeUpdated
	return res, nil
}

func (s *Service) deleteInboundTx(ctx context.Context, tx *sql.Tx, ch inbound.Change, at time.Time) (inbound.Result, error) {
	privacy := ch.Kind == store.EventPrivacyDelete
	tomb, tombstoned, err := s.links.TombstoneTx(ctx, tx, ch.Source, ch.ObjectType, ch.ExternalID)
	if err != nil {
		return inbound.Result{}, err
	}
	switch {
	case tombstoned && tomb.Kind == links.TombstoneMerged:
		// The id lives on as the survivor, whose record this must not delete.
		return inbound.Result{Outcome: OutcomeIgnored}, nil
	case tombstoned && !privacy && !at.After(tomb.OccurredAt):
		// A replay, or a deletion older than a restore that came after it.
		id, _, err := s.links.LookupRecordTx(ctx, tx, ch.Source, ch.ObjectType, ch.ExternalID)
		return inbound.Result{RecordID: id, Outcome: OutcomeIgnored}, err
	}
	// Even an id never linked gets its tombstone: its older create or update
	// may still be on its way.
	if err := s.links.PutTombstoneTx(ctx, tx, links.Tombstone{
		Destination: ch.Source, ObjectType: ch.ObjectType, ExternalID: ch.ExternalID,
		Kind: links.TombstoneDeleted, OccurredAt: at,
	}); err != nil {
		return inbound.Result{}, err
	}
	id, linked, err := s.links.LookupRecordTx(ctx, tx, ch.Source, ch.ObjectType, ch.ExternalID)
	if err != nil {
		return inbound.Result{}, err
	}
	if !linked {
		return inbound.Result{Outcome: OutcomeIgnored}, nil
	}
	res := inbound.Result{RecordID: id, Outcome: OutcomeIgnored}
	rec, err := s.get(ctx, tx, "record_get_for_update", ch.ObjectType, id)
	switch {
	case err == nil:
		if err := s.deleteTx(ctx, tx, rec, privacy); err != nil {
			return inbound.Result{}, err
		}
		res.Outcome = OutcomeDeleted
	case !errors.Is(err, ErrNotFound):
		return inbound.Result{}, err
	}
	if err := s.touchClocks(ctx, tx, ch.ObjectType, id, []string{tombstoneField}, at); err != nil {
		return inbound.Result{}, err
	}
	if privacy {
		if _, err := tx.ExecContext(ctx, s.q.Get("clock_delete_fields"), ch.ObjectType, id); err != nil {
			return inbound.Result{}, fmt.Errorf("remove field clocks of %s/%s: %w", ch.ObjectType, id, err)
		}
	}
	return res, nil
}

func (s *Service) mergeTx(ctx context.Context, tx *sql.Tx, ch inbound.Change, at time.Time) (inbound.Result, error) {
	survivor, survivorLinked, err := s.links.LookupRecordTx(ctx, tx, ch.Source, ch.ObjectType, ch.ExternalID)
	if err != nil {
		return inbound.Result{}, err
	}
	survivorExists := false
	if survivorLinked {
		switch _, err := s.get(ctx, tx, "record_get_for_update", ch.ObjectType, survivor); {
		case err == nil:
			survivorExists = true
		case !errors.Is(err, ErrNotFound):
			return inbound.Result{}, err
		}
	}
	merged := slices.Clone(ch.MergedIDs)
	slices.Sort(merged) // a fixed lock order
	for _, ext := range slices.Compact(merged) {
		if ext == "" || ext == ch.ExternalID {
			continue
		}
		// Linked or not, the merged-away id is redirected from now on, so a
		// late change of it cannot create a record for it.
		if err := s.links.PutTombstoneTx(ctx, tx, links.Tombstone{
			Destination: ch.Source, ObjectType: ch.ObjectType, ExternalID: ext,
			Kind: links.TombstoneMerged, SurvivorID: ch.ExternalID, OccurredAt: at,
		}); err != nil {
			return inbound.Result{}, err
		}
		id, ok, err := s.links.LookupRecordTx(ctx, tx, ch.Source, ch.ObjectType, ext)
		if err != nil {
			return inbound.Result{}, err
		}
		if !ok {
			continue
		}
		if err := s.links.UnlinkExternalTx(ctx, tx, ch.Source, ch.ObjectType, ext); err != nil {
			return inbound.Result{}, err
		}
		rec, err := s.get(ctx, tx, "record_get_for_update", ch.ObjectType, id)
		if errors.Is(err, ErrNotFound) {
			continue
		} else if err != nil {
			return inbound.Result{}, err
		}
		if !survivorExists {
			// Re-point: the merged record becomes the survivor's local record.
			if survivorLinked {
				if err := s.links.UnlinkExternalTx(ctx, tx, ch.Source, ch.ObjectType, ch.ExternalID); err != nil {
					return inbound.Result{}, err
				}
			}
			if err := s.links.LinkTx(ctx, tx, ch.Source, ch.ObjectType, id, ch.ExternalID); err != nil {
				return inbound.Result{}, err
			}
			survivor, survivorLinked, survivorExists = id, true, true
			continue
		}
		if id == survivor {
			continue
		}
		// The survivor has its own local record: the merged one goes.
		if err := s.deleteTx(ctx, tx, rec, false); err != nil {
			return inbound.Result{}, err
		}
	}
	// The survivor was live at the merge, so an older tombstone of it (it had
	// been merged away or deleted before) no longer stands.
	if err := s.links.RemoveTombstoneTx(ctx, tx, ch.Source, ch.ObjectType, ch.ExternalID, at); err != nil {
		return inbound.Result{}, err
	}
	res, err := s.upsertTx(ctx, tx, ch, at)
	if err != nil {
		return inbound.Result{}, err
	}
	res.Outcome = OutcomeMerged
	return res, nil
}
