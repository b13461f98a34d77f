package links

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

//go:embed sql
var sqlFS embed.FS

// ErrConflict is returned by Link when the external id is already linked to
// another local record of the same destination and object type. Unlink that
// record first (a merge does).
var ErrConflict = errors.New("links: external id is linked to another record")

// ErrInvalid is returned for an empty destination, object type or id.
var ErrInvalid = errors.New("links: invalid argument")

// ErrLinkMoved is returned by PushedMany for a state whose record is no
// longer linked to Pushed.LinkedTo.
var ErrLinkMoved = errors.New("links: the record's link changed during the write")

// Links reads and writes the hubsync_link table of one store.
type Links struct {
	st      store.Store
	db      *sql.DB
	dialect store.Dialect
	q       *dialectsql.Queries
}

// New returns the links of st's database. It panics if st has a dialect hubsync
// does not know, which no backend has.
func New(st store.Store) *Links {
	q, err := dialectsql.Load(sqlFS, "sql", st.Dialect())
	if err != nil {
		panic(err)
	}
	return &Links{st: st, db: st.DB(), dialect: st.Dialect(), q: q}
}

// Lookup returns the external id of a local record on destination.
func (l *Links) Lookup(ctx context.Context, destination, objectType, recordID string) (externalID string, ok bool, err error) {
	return l.LookupTx(ctx, l.db, destination, objectType, recordID)
}

// LookupTx is Lookup inside the caller's transaction.
func (l *Links) LookupTx(ctx context.Context, tx store.DBTX, destination, objectType, recordID string) (string, bool, error) {
	return l.one(ctx, tx, "lookup", destination, objectType, recordID)
}

// LookupRecord returns the local record id linked to an external id on destination.
func (l *Links) LookupRecord(ctx context.Context, destination, objectType, externalID string) (recordID string, ok bool, err error) {
	return l.LookupRecordTx(ctx, l.db, destination, objectType, externalID)
}

// LookupRecordTx is LookupRecord inside the caller's transaction.
func (l *Links) LookupRecordTx(ctx context.Context, tx store.DBTX, destination, objectType, externalID string) (string, bool, error) {
	return l.one(ctx, tx, "lookup_record", destination, objectType, externalID)
}

func (l *Links) one(ctx context.Context, tx store.DBTX, query, destination, objectType, id string) (string, bool, error) {
	if err := check(destination, objectType, id); err != nil {
		return "", false, err
	}
	var out string
	err := tx.QueryRowContext(ctx, l.q.Get(query), destination, objectType, id).Scan(&out)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("links: %s %s/%s/%s: %w", query, destination, objectType, id, err)
	}
	return out, true, nil
}

// Link records that local record recordID is externalID on destination. It is
// idempotent, and re-links a record that had another external id. It returns
// ErrConflict when externalID already belongs to another local record.
func (l *Links) Link(ctx context.Context, destination, objectType, recordID, externalID string) error {
	return dialectsql.InTxRetry(ctx, l.db, l.st.Retryable, "links", func(tx *sql.Tx) error {
		return l.LinkTx(ctx, tx, destination, objectType, recordID, externalID)
	})
}

// LinkTx is Link inside the caller's transaction. Two writers of one link
// may run at once (the SyncWorker matching a record by email, the outbound
// worker recording the object it created): when both pass the conflict check,
// the write of the second waits for the first and then leaves its link as it
// is, and a read-back tells the same link (no error, whichever commits first)
// from an external id linked to another record (ErrConflict).
func (l *Links) LinkTx(ctx context.Context, tx store.DBTX, destination, objectType, recordID, externalID string) error {
	if err := check(destination, objectType, recordID); err != nil {
		return err
	}
	if externalID == "" {
		return fmt.Errorf("%w: empty external id for %s/%s/%s", ErrInvalid, destination, objectType, recordID)
	}
	owner, ok, err := l.LookupRecordTx(ctx, tx, destination, objectType, externalID)
	if err != nil {
		return err
	}
	if ok {
		if owner == recordID {
			return nil
		}
		return fmt.Errorf("%w: %s %s %s is linked to record %s, not %s", ErrConflict, destination, objectType, externalID, owner, recordID)
	}
	now := dialectsql.Time(l.dialect, l.st.Now())
	// The record's link is read first, so that a record with none (a
	// creation, the common case) is linked by the insert alone: on
	// PostgreSQL, before hubsync_link has statistics, the re-link's UPDATE
	// may read every link of the object type (14 ms a link at 100,000
	// contacts), where the lookups probe one key whatever the statistics.
	// MySQL tries the UPDATE first, as it always did: under REPEATABLE READ
	// a plain read sees the transaction's snapshot, where the UPDATE sees a
	// link another writer committed since, and re-links it.
	linked := true
	if l.dialect != store.MySQL {
		if _, linked, err = l.LookupTx(ctx, tx, destination, objectType, recordID); err != nil {
			return err
		}
	}
	if linked { // re-linked (a merge): rare
		res, err := tx.ExecContext(ctx, l.q.Get("relink"), externalID, now, destination, objectType, recordID)
		if err != nil {
			return fmt.Errorf("links: relink %s/%s/%s: %w", destination, objectType, recordID, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("links: relink %s/%s/%s: %w", destination, objectType, recordID, err)
		} else if n > 0 {
			return nil
		}
		// No link (MySQL), or unlinked meanwhile: insert.
	}
	return l.insert(ctx, tx, destination, objectType, recordID, externalID, now)
}

// LinkNewTx is LinkTx for a record that has no link on destination, as one
// created in the caller's transaction: it inserts the link and reads it back
// only when the insert did not write it (always on MySQL), where LinkTx first
// reads the external id's owner and then the record's link (MySQL: tries the
// re-link). An external id linked
// to another record is ErrConflict; a link of the record to another id is
// ErrConflict too, where LinkTx would re-link the record.
func (l *Links) LinkNewTx(ctx context.Context, tx store.DBTX, destination, objectType, recordID, externalID string) error {
	if err := check(destination, objectType, recordID); err != nil {
		return err
	}
	if externalID == "" {
		return fmt.Errorf("%w: empty external id for %s/%s/%s", ErrInvalid, destination, objectType, recordID)
	}
	now := dialectsql.Time(l.dialect, l.st.Now())
	return l.insert(ctx, tx, destination, objectType, recordID, externalID, now)
}

// insert writes the link of a record that had none when it was read, then
// reads it back unless the insert certainly wrote it.
func (l *Links) insert(ctx context.Context, tx store.DBTX, destination, objectType, recordID, externalID string, now any) error {
	res, err := tx.ExecContext(ctx, l.q.Get("insert"), destination, objectType, recordID, externalID, now, now)
	if err != nil {
		return fmt.Errorf("links: link %s/%s/%s to %s: %w", destination, objectType, recordID, externalID, err)
	}
	// An inserted row is this transaction's link, as in linkChunk; MySQL's
	// count may include a skipped row.
	if n, err := res.RowsAffected(); err == nil && n == 1 && l.dialect != store.MySQL {
		return nil
	}
	return l.checkLinked(ctx, tx, destination, objectType, [][2]string{{recordID, externalID}})
}

// Unlink removes the link of a local record on destination; a missing link is
// not an error.
func (l *Links) Unlink(ctx context.Context, destination, objectType, recordID string) error {
	return l.UnlinkTx(ctx, l.db, destination, objectType, recordID)
}

// UnlinkTx is Unlink inside the caller's transaction.
func (l *Links) UnlinkTx(ctx context.Context, tx store.DBTX, destination, objectType, recordID string) error {
	return l.exec(ctx, tx, "unlink", destination, objectType, recordID)
}

// UnlinkExternal removes the link of an external id on destination; a missing
// link is not an error.
func (l *Links) UnlinkExternal(ctx context.Context, destination, objectType, externalID string) error {
	return l.UnlinkExternalTx(ctx, l.db, destination, objectType, externalID)
}

// UnlinkExternalTx is UnlinkExternal inside the caller's transaction.
func (l *Links) UnlinkExternalTx(ctx context.Context, tx store.DBTX, destination, objectType, externalID string) error {
	return l.exec(ctx, tx, "unlink_external", destination, objectType, externalID)
}

func (l *Links) exec(ctx context.Context, tx store.DBTX, query, destination, objectType, id string) error {
	if err := check(destination, objectType, id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, l.q.Get(query), destination, objectType, id); err != nil {
		return fmt.Errorf("links: %s %s/%s/%s: %w", query, destination, objectType, id, err)
	}
	return nil
}

func check(destination, objectType, id string) error {
	if destination == "" || objectType == "" || id == "" {
		return fmt.Errorf("%w: destination %q, object type %q and id %q must all be set", ErrInvalid, destination, objectType, id)
	}
	return nil
}
