package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

// ErrNoPgx is returned by EnqueuePgxTx for a store that does not take pgx
// transactions (one that is not PostgreSQL).
var ErrNoPgx = errors.New("pgstore: the store does not take pgx transactions; use a PostgreSQL store, or outbox.EnqueueTx with a *sql.Tx")

// PgxEnqueuer is the pgx.Tx support of a PostgreSQL store. *Store implements
// it; a decorator of a PostgreSQL store passes it on by implementing it too.
type PgxEnqueuer interface {
	EnqueueOutboundPgx(ctx context.Context, tx pgx.Tx, ev store.OutboundEvent) (store.EnqueueResult, error)
}

var _ PgxEnqueuer = (*Store)(nil)

// EnqueuePgxTx is outbox.EnqueueTx for an application that talks to PostgreSQL
// through pgx directly: the event is written inside the caller's pgx.Tx, with
// the same anti-loop rule and sync source stamping (outbox.Prepare). st must be
// a PostgreSQL store of the same database, else the error matches ErrNoPgx.
func EnqueuePgxTx(ctx context.Context, st store.Store, tx pgx.Tx, ev store.OutboundEvent) (store.EnqueueResult, error) {
	pg, ok := st.(PgxEnqueuer)
	if !ok {
		return store.EnqueueResult{}, fmt.Errorf("%w (got a %s store)", ErrNoPgx, st.Dialect())
	}
	ev, skip, err := outbox.Prepare(ctx, ev)
	if err != nil || skip {
		return store.EnqueueResult{}, err
	}
	res, err := pg.EnqueueOutboundPgx(ctx, tx, ev)
	if err != nil {
		return store.EnqueueResult{}, fmt.Errorf("enqueue outbound %s %s/%s: %w", ev.Destination, ev.ObjectType, ev.RecordID, err)
	}
	return res, nil
}
