package records

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

// Resend enqueues, for every destination, an outbound update event that
// carries the record's current state (as a records write would), without
// changing the record: the repair of a destination that drifted from it.
// theirs holds, by local field name, what the destination has now (nil for a
// field it lacks); it is the event's "before" state, so the outbound worker
// sends exactly the fields that differ from it. A nil theirs sends the whole
// record (a record the destination never accepted). The record's row is
// locked while the event is written, so the event is ordered after every
// write that committed before it. It returns the record as resent.
func (s *Service) Resend(ctx context.Context, objectType, id string, theirs map[string]any) (Record, error) {
	return s.resend(ctx, objectType, id, theirs, time.Time{})
}

// resend is Resend; a non-zero at also moves the field clocks of what the
// event sends (the fields of theirs whose value differs from the record's)
// to at, never backwards, in the same transaction.
func (s *Service) resend(ctx context.Context, objectType, id string, theirs map[string]any, at time.Time) (Record, error) {
	if err := s.checkType(objectType); err != nil {
		return Record{}, err
	}
	var rec Record
	err := s.inTx(ctx, func(tx *writeTx) error {
		var err error
		rec, err = s.get(ctx, tx.Tx, "record_get_for_update", objectType, id)
		if err != nil {
			return err
		}
		payload, err := outbox.Snapshot{ID: rec.ID, Version: rec.Version, Fields: rec.Fields}.Marshal()
		if err != nil {
			return err
		}
		var old []byte
		if theirs != nil {
			before := maps.Clone(rec.Fields)
			for k, v := range theirs {
				if v == nil {
					delete(before, k)
				} else {
					before[k] = v
				}
			}
			if old, err = (outbox.Snapshot{ID: rec.ID, Version: rec.Version, Fields: before}).Marshal(); err != nil {
				return err
			}
		}
		for _, dest := range s.cfg.Destinations {
			if _, err := outbox.EnqueueTx(ctx, s.st, tx.Tx, store.OutboundEvent{
				ID: newID(), Destination: dest, ObjectType: objectType, RecordID: rec.ID,
				EventType: store.EventUpdate, Payload: payload, OldPayload: old,
			}); err != nil {
				return fmt.Errorf("records: resend %s/%s: %w", objectType, id, err)
			}
		}
		if at.IsZero() {
			return nil
		}
		var sent []string
		for k, v := range theirs {
			if !sameJSON(rec.Fields[k], v) {
				sent = append(sent, k)
			}
		}
		return s.touchClocks(ctx, tx.Tx, objectType, id, sent, at)
	})
	return rec, err
}

// RepairOverwrite queues a write of record id's state over what a write of
// another record left on the destination object the record is linked to:
// theirs holds, by local field name, the values that write sent (see
// Resend), and at is when the destination took it (zero when unknown). The
// outbound worker calls it when the destination resolved a record's write by
// its id property (an email) to the object of record id: a merge took the
// writing record's object away while its create's retry was under way, or
// the email had moved to that object (outbound.OverwriteRepairer). The
// fields the repair sends have their clocks moved to at (or now, if later),
// as a local write's would be: the destination's values of them since the
// merge are that stray write's, and a read of the object stamped earlier (a
// merge's survivor read, stamped with the merge's time) must not make the
// record take them.
func (s *Service) RepairOverwrite(ctx context.Context, objectType, id string, theirs map[string]any, at time.Time) error {
	if theirs == nil {
		theirs = map[string]any{} // sends only the fields the write set: never the whole record for want of them
	}
	if now := s.now(); now.After(at) {
		at = now
	}
	_, err := s.resend(ctx, objectType, id, theirs, at)
	return err
}
