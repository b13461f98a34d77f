package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/links"
)

// TombstoneDeleted keeps, for each record of linked (record id → the
// HubSpot id the outbound worker has just linked it to) that is deleted
// here (no row, its deletion's version kept), a local-delete tombstone of that HubSpot id, as Delete keeps of the
// links it finds; it returns those records' ids. The outbound worker asks
// after storing the links of objects it created or adopted
// (outbound.Config.LocalRecords): a record deleted while its create was
// in flight had no link for Delete to tombstone, and a HubSpot change of
// the new object would otherwise bring the record back before the
// deletion, queued after the create, archives the object. Each record's
// row is locked as a deletion locks it, so a deletion in flight is waited
// for: either it sees the link, or this sees the deletion. The worker asks
// too after archiving the object a deleted record's lost create made, found
// by its id property value (no link of it was ever stored): a HubSpot merge
// of another record's object into it then takes that record with it.
func (s *Service) TombstoneDeleted(ctx context.Context, destination, objectType string, linked map[string]string) ([]string, error) {
	if len(linked) == 0 {
		return nil, nil
	}
	ids := slices.Sorted(maps.Keys(linked)) // one lock order
	var gone []string
	err := s.inTx(ctx, func(tx *writeTx) error {
		gone = gone[:0]
		now := s.now()
		for _, id := range ids {
			var one int
			err := tx.QueryRowContext(ctx, s.q.Get("record_lock"), objectType, id).Scan(&one)
			switch {
			case err == nil:
				continue
			case !errors.Is(err, sql.ErrNoRows):
				return fmt.Errorf("records: lock %s/%s: %w", objectType, id, err)
			}
			if v, err := s.goneVersion(ctx, tx, "record_gone_get_current", objectType, id); err != nil {
				return err
			} else if v == 0 {
				continue // never a record of this service's: not deleted here
			}
			if err := s.links.PutTombstoneTx(ctx, tx, links.Tombstone{
				Destination: destination, ObjectType: objectType, ExternalID: linked[id],
				Kind: links.TombstoneLocalDeleted, OccurredAt: now,
			}); err != nil {
				return fmt.Errorf("records: %w", err)
			}
			gone = append(gone, id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return gone, nil
}

// Deleted reports whether record id of objectType is deleted here: it has
// no row, and its deletion's version is kept (hubsync_record_gone). The
// outbound worker asks when the object it created for the record is linked
// to another record already (outbound.Config.LocalRecords).
func (s *Service) Deleted(ctx context.Context, objectType, id string) (bool, error) {
	_, err := s.Get(ctx, objectType, id)
	switch {
	case err == nil:
		return false, nil
	case !errors.Is(err, ErrNotFound):
		return false, err
	}
	v, err := s.goneVersion(ctx, s.db, "record_gone_get", objectType, id)
	return v > 0, err
}

// DeletedAtSource returns the records among ids that were deleted by a
// change of destination's applied here (its deletion of their object, or a
// merge that took it away) rather than by the application: they have no row,
// their deletion is kept (hubsync_record_gone), and no deletion of theirs was
// queued for destination (a local deletion queues one for every destination;
// a change from one queues one for the others). The outbound worker asks
// before it writes afresh a record that has no link
// (outbound.SourceDeletedRecords): the destination's change is the newer one,
// and the write would bring the object back or, upserted by email, write over
// a merge's survivor. One query for ids (CurrentFields), and two more per
// missing record.
func (s *Service) DeletedAtSource(ctx context.Context, destination, objectType string, ids []string) ([]string, error) {
	live, err := s.CurrentFields(ctx, objectType, ids)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range ids {
		if _, ok := live[id]; ok {
			continue
		}
		v, err := s.goneVersion(ctx, s.db, "record_gone_get", objectType, id)
		if err != nil {
			return nil, err
		}
		if v == 0 {
			continue // no deletion of it is kept
		}
		var one int
		err = s.db.QueryRowContext(ctx, s.q.Get("record_outbound_delete"), objectType, id, destination).Scan(&one)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			out = append(out, id)
		case err != nil:
			return nil, fmt.Errorf("records: the deletion of %s/%s for %s: %w", objectType, id, destination, err)
		}
	}
	return out, nil
}

// fieldsManyMax bounds the ids of one CurrentFields query.
const fieldsManyMax = 100

// CurrentFields returns the fields of the records of ids that exist, by
// id, in one query per fieldsManyMax ids. The outbound worker asks before
// an update (outbound.Config.LocalRecords): a field whose value differs from
// the one its event carries was changed since, by HubSpot (a HubSpot change
// applied here enqueues no outbound event) or by a later local write (whose
// own event follows), and the event's older value is not written.
func (s *Service) CurrentFields(ctx context.Context, objectType string, ids []string) (map[string]map[string]any, error) {
	out := make(map[string]map[string]any, len(ids))
	for chunk := range slices.Chunk(ids, fieldsManyMax) {
		list, err := json.Marshal(chunk)
		if err != nil {
			return nil, err
		}
		rows, err := s.db.QueryContext(ctx, s.q.Get("record_fields_many"), objectType, string(list))
		if err != nil {
			return nil, fmt.Errorf("records: read %d %s records: %w", len(chunk), objectType, err)
		}
		for rows.Next() {
			var id string
			var enc []byte
			if err := rows.Scan(&id, &enc); err != nil {
				rows.Close()
				return nil, fmt.Errorf("records: read %s records: %w", objectType, err)
			}
			f, err := decodeFields(enc)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("records: decode %s/%s: %w", objectType, id, err)
			}
			out[id] = f
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("records: read %s records: %w", objectType, err)
		}
	}
	return out, nil
}

// requeueSuperseded returns to their queue, after the transaction that
// deleted their records committed, the dead letters (in the source's own
// queue: recordTx.supersede) of records a source's change deleted (a
// deletion or a merge that took the record away). Each waited for an
// operator, but the change deleted what it would write: the outbound
// worker, claiming it behind the record's later events, completes it
// without a write (DeletedAtSource; or its update meets the deletion's 404),
// and the dead letter stops asking for a decision nobody needs to make. A
// failure to re-queue only leaves them where they were, and is logged.
func (s *Service) requeueSuperseded(ctx context.Context, ids []string) {
	n, err := s.st.Outbound().Requeue(context.WithoutCancel(ctx), ids...)
	if err != nil {
		s.log.Warn("records: re-queue the dead letters of records a source's change deleted; they stay dead letters", "events", ids, "err", err)
		return
	}
	s.log.Info("records: re-queued the dead letters of records a source's change deleted, for the outbound worker to resolve", "events", n)
}

var _ apply.UnknownIDs = (*Service)(nil)

// UnknownIDs returns the ids among externalIDs that no record is linked to on
// source and that keep no tombstone (apply.UnknownIDs): one query for the
// links, and one primary-key read of a tombstone per id without a link.
func (s *Service) UnknownIDs(ctx context.Context, source, objectType string, externalIDs []string) ([]string, error) {
	owners, err := s.links.LookupRecordsMany(ctx, source, objectType, externalIDs)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ext := range externalIDs {
		if _, linked := owners[ext]; linked || slices.Contains(out, ext) {
			continue
		}
		_, tombstoned, err := s.links.Tombstone(ctx, source, objectType, ext)
		if err != nil {
			return nil, err
		}
		if !tombstoned {
			out = append(out, ext)
		}
	}
	return out, nil
}
