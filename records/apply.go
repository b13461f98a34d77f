package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/inbound"
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
// hubsync.WithSyncSource(ctx, ch.Source), so nothing is enqueued back to the
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
// Policy for the other kinds:
//   - Delete deletes the linked local record and writes a tombstone clock at
//     OccurredAt; the link and the field clocks stay, so a create or update that
//     is not newer than the tombstone is stale instead of resurrecting the record.
//     A newer one (or a Restore) recreates it under the same local id.
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
	ctx = hubsync.WithSyncSource(ctx, ch.Source)
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

func (s *Service) upsertTx(ctx context.Context, tx *sql.Tx, ch inbound.Change, at time.Time) (inbound.Result, error) {
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
	id, linked, err := s.links.LookupRecordTx(ctx, tx, ch.Source, ch.ObjectType, ch.ExternalID)
	if err != nil {
		return inbound.Result{}, err
	}
	if !linked {
		return inbound.Result{Outcome: OutcomeIgnored}, nil
	}
	privacy := ch.Kind == store.EventPrivacyDelete
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
	res, err := s.upsertTx(ctx, tx, ch, at)
	if err != nil {
		return inbound.Result{}, err
	}
	res.Outcome = OutcomeMerged
	return res, nil
}
