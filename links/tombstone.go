package links

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

// Kinds of Tombstone.
const (
	// TombstoneDeleted marks an external id deleted at its source.
	TombstoneDeleted = "deleted"
	// TombstoneMerged marks an external id merged into another (SurvivorID).
	TombstoneMerged = "merged"
	// TombstoneLocalDeleted marks an external id whose local record was
	// deleted locally (apply.TombstoneLocalDeleted).
	TombstoneLocalDeleted = "local_deleted"
)

// Tombstone records that an external id was deleted or merged away at its
// source, and when. Sources do not order their events, so a change of the id
// that is older than the tombstone may still arrive; the records service judges
// it against the tombstone instead of creating the record again.
type Tombstone struct {
	Destination string
	ObjectType  string
	ExternalID  string
	// Kind is TombstoneDeleted, TombstoneMerged or TombstoneLocalDeleted.
	Kind string
	// SurvivorID is, for TombstoneMerged, the external id the id was merged
	// into; "" otherwise.
	SurvivorID string
	// OccurredAt is the source's time of the deletion or merge (microsecond
	// precision).
	OccurredAt time.Time
}

// Tombstone reads the tombstone of an external id; ok is false when it has none.
func (l *Links) Tombstone(ctx context.Context, destination, objectType, externalID string) (t Tombstone, ok bool, err error) {
	return l.TombstoneTx(ctx, l.db, destination, objectType, externalID)
}

// TombstoneTx is Tombstone inside the caller's transaction. On PostgreSQL and
// MySQL it is a locking read (SELECT ... FOR UPDATE), so the tombstone cannot
// change before the transaction ends.
func (l *Links) TombstoneTx(ctx context.Context, tx store.DBTX, destination, objectType, externalID string) (Tombstone, bool, error) {
	if err := check(destination, objectType, externalID); err != nil {
		return Tombstone{}, false, err
	}
	t := Tombstone{Destination: destination, ObjectType: objectType, ExternalID: externalID}
	err := tx.QueryRowContext(ctx, l.q.Get("tombstone_get"), destination, objectType, externalID).
		Scan(&t.Kind, &t.SurvivorID, dialectsql.TimeDest(&t.OccurredAt))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Tombstone{}, false, nil
	case err != nil:
		return Tombstone{}, false, fmt.Errorf("links: tombstone %s/%s/%s: %w", destination, objectType, externalID, err)
	}
	return t, true, nil
}

// PutTombstoneTx writes t inside the caller's transaction. A tombstone only
// moves forward: t replaces an existing one only when its OccurredAt is newer,
// so replays and late deliveries are harmless.
func (l *Links) PutTombstoneTx(ctx context.Context, tx store.DBTX, t Tombstone) error {
	if err := check(t.Destination, t.ObjectType, t.ExternalID); err != nil {
		return err
	}
	switch {
	case (t.Kind == TombstoneDeleted || t.Kind == TombstoneLocalDeleted) && t.SurvivorID != "":
		return fmt.Errorf("%w: a %s tombstone has no survivor (got %q)", ErrInvalid, t.Kind, t.SurvivorID)
	case t.Kind == TombstoneMerged && (t.SurvivorID == "" || t.SurvivorID == t.ExternalID):
		return fmt.Errorf("%w: a %s tombstone of %s needs the survivor's external id (got %q)", ErrInvalid, t.Kind, t.ExternalID, t.SurvivorID)
	case t.Kind != TombstoneDeleted && t.Kind != TombstoneMerged && t.Kind != TombstoneLocalDeleted:
		return fmt.Errorf("%w: tombstone kind %q; use %q, %q or %q", ErrInvalid, t.Kind, TombstoneDeleted, TombstoneMerged, TombstoneLocalDeleted)
	case t.OccurredAt.IsZero():
		return fmt.Errorf("%w: tombstone of %s has no OccurredAt", ErrInvalid, t.ExternalID)
	}
	if _, err := tx.ExecContext(ctx, l.q.Get("tombstone_put"), t.Destination, t.ObjectType, t.ExternalID, t.Kind, t.SurvivorID,
		dialectsql.Time(l.dialect, t.OccurredAt), dialectsql.Time(l.dialect, l.st.Now())); err != nil {
		return fmt.Errorf("links: put tombstone %s/%s/%s: %w", t.Destination, t.ObjectType, t.ExternalID, err)
	}
	return nil
}

// RemoveTombstoneTx removes the tombstone of an external id if it is older than
// before: the caller knows the id was live at that time (it survived a merge).
// A missing tombstone is not an error.
func (l *Links) RemoveTombstoneTx(ctx context.Context, tx store.DBTX, destination, objectType, externalID string, before time.Time) error {
	if err := check(destination, objectType, externalID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, l.q.Get("tombstone_remove"), destination, objectType, externalID, dialectsql.Time(l.dialect, before)); err != nil {
		return fmt.Errorf("links: remove tombstone %s/%s/%s: %w", destination, objectType, externalID, err)
	}
	return nil
}

// MergedMany returns the merged-away tombstones among externalIDs (one query
// per LookupManyMax ids), by external id; the ids without one are absent.
func (l *Links) MergedMany(ctx context.Context, destination, objectType string, externalIDs []string) (map[string]Tombstone, error) {
	out := map[string]Tombstone{}
	err := eachChunk(destination, objectType, externalIDs, func(chunk []string) error {
		list, err := json.Marshal(chunk)
		if err != nil {
			return fmt.Errorf("links: merged tombstones: %w", err)
		}
		rows, err := l.db.QueryContext(ctx, l.q.Get("merged_many"), destination, objectType, string(list))
		if err != nil {
			return fmt.Errorf("links: merged tombstones %s/%s (%d ids): %w", destination, objectType, len(chunk), err)
		}
		defer rows.Close()
		for rows.Next() {
			t := Tombstone{Destination: destination, ObjectType: objectType, Kind: TombstoneMerged}
			if err := rows.Scan(&t.ExternalID, &t.SurvivorID, dialectsql.TimeDest(&t.OccurredAt)); err != nil {
				return fmt.Errorf("links: merged tombstones %s/%s: %w", destination, objectType, err)
			}
			out[t.ExternalID] = t
		}
		return rows.Err()
	})
	return out, err
}
