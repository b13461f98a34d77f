package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/hubsync/hubsync/links"
)

// TombstoneDeleted keeps, for each record of linked (record id → the
// HubSpot id the outbound worker has just linked it to) that is deleted
// here (no row, its deletion's version kept), a local-delete tombstone of that HubSpot id, as Delete keeps of the
// links it finds; it returns those records' ids. The outbound worker asks
// after storing the links of objects it created or adopted
// (outbound.Config.DeletedRecords): a record deleted while its create was
// in flight had no link for Delete to tombstone, and a HubSpot change of
// the new object would otherwise bring the record back before the
// deletion, queued after the create, archives the object. Each record's
// row is locked as a deletion locks it, so a deletion in flight is waited
// for: either it sees the link, or this sees the deletion.
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
			if v, err := s.goneVersion(ctx, tx.Tx, objectType, id); err != nil {
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
// to another record already (outbound.Config.DeletedRecords).
func (s *Service) Deleted(ctx context.Context, objectType, id string) (bool, error) {
	_, err := s.Get(ctx, objectType, id)
	switch {
	case err == nil:
		return false, nil
	case !errors.Is(err, ErrNotFound):
		return false, err
	}
	var v int64
	err = s.db.QueryRowContext(ctx, s.q.Get("record_gone_get"), objectType, id).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("records: read the version of deleted %s/%s: %w", objectType, id, err)
	}
	return true, nil
}
