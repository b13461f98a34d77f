package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/hubsync/hubsync/store"
)

// ErrInvalidPayload is returned by EnqueueTx when an outbound event's Payload is
// not a Snapshot (or OldPayload is neither a Snapshot nor empty): the outbound
// worker could not read it, so it is refused before it is stored.
var ErrInvalidPayload = errors.New("outbox: outbound payload is not a snapshot")

// EnqueueTx writes an outbound change inside the caller's transaction tx, so the
// application's own write and the event commit together or not at all: the heart
// of the transactional outbox. tx must belong to st's database (st.DB()).
//
// ev.Payload is the record after the change and ev.OldPayload the record before
// (nil on create), both encoded Snapshots. Anti-loop: when ctx carries
// WithSyncSource(ctx, ev.Destination) the change came from that destination's own
// sync and nothing is enqueued; the result is then the zero EnqueueResult
// (Inserted false) and the error nil. Otherwise the sync source of ctx, if any,
// is stamped into the Payload snapshot's Metadata under MetadataSyncSource, where
// the outbound worker checks it again.
func EnqueueTx(ctx context.Context, st store.Store, tx store.DBTX, ev store.OutboundEvent) (store.EnqueueResult, error) {
	ev, skip, err := Prepare(ctx, ev)
	if err != nil || skip {
		return store.EnqueueResult{}, err
	}
	res, err := st.Outbound().EnqueueTx(ctx, tx, ev)
	if err != nil {
		return store.EnqueueResult{}, fmt.Errorf("enqueue outbound %s %s/%s: %w", ev.Destination, ev.ObjectType, ev.RecordID, err)
	}
	return res, nil
}

// Prepare applies, before an outbound event is stored, what EnqueueTx applies:
// it checks that Destination, ObjectType and RecordID are set and that Payload
// (and OldPayload, when set) are Snapshots (else ErrInvalidPayload), reports
// skip when ctx carries WithSyncSource(ctx, ev.Destination) (anti-loop layer 1),
// and otherwise stamps the sync source of ctx into the Payload's Metadata
// (layer 2). A backend-specific enqueue (pgstore.EnqueuePgxTx) calls it so the
// rules hold whichever transaction type the application uses.
func Prepare(ctx context.Context, ev store.OutboundEvent) (_ store.OutboundEvent, skip bool, _ error) {
	if ev.Destination == "" || ev.ObjectType == "" || ev.RecordID == "" {
		return ev, false, fmt.Errorf("enqueue outbound: Destination (%q), ObjectType (%q) and RecordID (%q) must all be set", ev.Destination, ev.ObjectType, ev.RecordID)
	}
	if SkipDestination(ctx, ev.Destination) {
		return ev, true, nil
	}
	snap, err := ParseSnapshot(ev.Payload)
	if err != nil || snap == nil {
		return ev, false, fmt.Errorf("%w: Payload of %s/%s: %v", ErrInvalidPayload, ev.ObjectType, ev.RecordID, err)
	}
	if _, err := ParseSnapshot(ev.OldPayload); err != nil {
		return ev, false, fmt.Errorf("%w: OldPayload of %s/%s: %v", ErrInvalidPayload, ev.ObjectType, ev.RecordID, err)
	}
	src := SyncSource(ctx)
	if src == "" || snap.Metadata[MetadataSyncSource] == src {
		return ev, false, nil
	}
	if snap.Metadata == nil {
		snap.Metadata = map[string]string{}
	}
	snap.Metadata[MetadataSyncSource] = src
	if ev.Payload, err = snap.Marshal(); err != nil {
		return ev, false, err
	}
	return ev, false, nil
}
