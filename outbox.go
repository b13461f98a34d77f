package hubsync

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hubsync/hubsync/store"
)

// ErrInvalidPayload is returned by EnqueueTx when an outbound event's Payload is
// not a Snapshot (or OldPayload is neither a Snapshot nor empty): the outbound
// worker could not read it, so it is refused before it is stored.
var ErrInvalidPayload = errors.New("hubsync: outbound payload is not a snapshot")

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
	ev, skip, err := prepareOutbound(ctx, ev)
	if err != nil || skip {
		return store.EnqueueResult{}, err
	}
	res, err := st.Outbound().EnqueueTx(ctx, tx, ev)
	if err != nil {
		return store.EnqueueResult{}, fmt.Errorf("enqueue outbound %s %s/%s: %w", ev.Destination, ev.ObjectType, ev.RecordID, err)
	}
	return res, nil
}

// prepareOutbound applies the anti-loop rule and stamps the sync source. skip
// reports that the event must not be enqueued.
func prepareOutbound(ctx context.Context, ev store.OutboundEvent) (_ store.OutboundEvent, skip bool, _ error) {
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

// pgxEnqueuer is the pgx.Tx support of the PostgreSQL store (pgstore.Store).
type pgxEnqueuer interface {
	EnqueueOutboundPgx(ctx context.Context, tx pgx.Tx, ev store.OutboundEvent) (store.EnqueueResult, error)
}

// ErrNoPgx is returned by EnqueuePgxTx for a store that is not PostgreSQL.
var ErrNoPgx = errors.New("hubsync: the store does not take pgx transactions; use a PostgreSQL store, or EnqueueTx with a *sql.Tx")

// EnqueuePgxTx is EnqueueTx for an application that talks to PostgreSQL through
// pgx directly: the event is written inside the caller's pgx.Tx, with the same
// anti-loop rule and sync source stamping. st must be a PostgreSQL store
// (pgstore.Store) of the same database.
func EnqueuePgxTx(ctx context.Context, st store.Store, tx pgx.Tx, ev store.OutboundEvent) (store.EnqueueResult, error) {
	pg, ok := st.(pgxEnqueuer)
	if !ok {
		return store.EnqueueResult{}, fmt.Errorf("%w (got a %s store)", ErrNoPgx, st.Dialect())
	}
	ev, skip, err := prepareOutbound(ctx, ev)
	if err != nil || skip {
		return store.EnqueueResult{}, err
	}
	res, err := pg.EnqueueOutboundPgx(ctx, tx, ev)
	if err != nil {
		return store.EnqueueResult{}, fmt.Errorf("enqueue outbound %s %s/%s: %w", ev.Destination, ev.ObjectType, ev.RecordID, err)
	}
	return res, nil
}
