package links

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

// Pushed is the last state of a local record that a destination accepted
// (table hubsync_pushed). The outbound worker diffs its next write of the
// record against Fields, so that a write carries every change since the last
// success (the changes of a dead-lettered event included), and completes
// without a call an event that is not newer than it.
type Pushed struct {
	// RecordID is the local record id.
	RecordID string
	// ExternalID is the object the state was written to. A state is current
	// only while ExternalID is the record's link ("" and no link after an
	// archive); a re-link to another object (a merge) or an unlink makes it
	// stale, and a stale state must be ignored.
	ExternalID string
	// Version is the record's version in the state; 0 when the snapshot had none.
	Version int64
	// Fields are the record's local fields in the state; nil when Deleted.
	Fields map[string]any
	// Deleted marks an archive (or a record that never reached the
	// destination, or was deleted there): it is gone there.
	Deleted bool
	// Seq is the highest store Seq among the events the state came from: the
	// database-assigned order of the record's changes. An event with a Seq up
	// to it is not newer than the state (a record deleted and created again
	// restarts its versions, but never its Seq). 0 for states stored before
	// Seq existed.
	Seq int64
	// EventDate is the creation time of the newest event the state came from;
	// only states and events without a Seq are ordered by it.
	EventDate time.Time
	// Carried are the owed fields (AddOwed) the write carried; PushedMany
	// removes them from the record's owed fields in the same transaction.
	// Never read back by LookupPushedMany.
	Carried []string
	// LinkedTo, when set, is the external id the record was linked to when
	// the write was planned: PushedMany then stores the state only if the
	// record is still linked to it, and fails with ErrLinkMoved otherwise
	// (the inbound side re-pointed or unlinked the record during the write,
	// after a merge or a deletion in the destination). Never read back.
	LinkedTo *string
}

// Current reports whether p describes the object the record is linked to now
// (linkedID, "" for none); a nil p is never current.
func (p *Pushed) Current(linkedID string) bool {
	return p != nil && p.ExternalID == linkedID && (linkedID != "" || p.Deleted)
}

// LookupPushedMany returns the pushed states of the records among recordIDs
// that have one, by record id, in one query per LookupManyMax ids. The states
// may be stale: check Pushed.Current against the record's link.
func (l *Links) LookupPushedMany(ctx context.Context, destination, objectType string, recordIDs []string) (map[string]Pushed, error) {
	return l.LookupPushedManyTx(ctx, l.db, destination, objectType, recordIDs)
}

// LookupPushedManyTx is LookupPushedMany inside the caller's transaction.
func (l *Links) LookupPushedManyTx(ctx context.Context, tx store.DBTX, destination, objectType string, recordIDs []string) (map[string]Pushed, error) {
	out := make(map[string]Pushed, len(recordIDs))
	err := eachChunk(destination, objectType, recordIDs, func(chunk []string) error {
		return l.pushedChunk(ctx, tx, destination, objectType, chunk, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (l *Links) pushedChunk(ctx context.Context, tx store.DBTX, destination, objectType string, ids []string, out map[string]Pushed) error {
	list, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("links: lookup pushed: %w", err)
	}
	rows, err := tx.QueryContext(ctx, l.q.Get("lookup_pushed_many"), destination, objectType, string(list))
	if err != nil {
		return fmt.Errorf("links: lookup pushed %s/%s (%d ids): %w", destination, objectType, len(ids), err)
	}
	defer rows.Close()
	for rows.Next() {
		var p Pushed
		var fields sql.NullString
		if err := rows.Scan(&p.RecordID, &p.ExternalID, &p.Version, &fields, &p.Deleted, dialectsql.TimeDest(&p.EventDate), &p.Seq); err != nil {
			return fmt.Errorf("links: lookup pushed %s/%s: %w", destination, objectType, err)
		}
		if fields.Valid && fields.String != "null" {
			// Numbers stay json.Number, as in a parsed snapshot, so a diff
			// against the state compares them digit for digit.
			dec := json.NewDecoder(bytes.NewReader([]byte(fields.String)))
			dec.UseNumber()
			if err := dec.Decode(&p.Fields); err != nil {
				return fmt.Errorf("links: decode pushed fields of %s/%s/%s: %w", destination, objectType, p.RecordID, err)
			}
		}
		out[p.RecordID] = p
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("links: lookup pushed %s/%s: %w", destination, objectType, err)
	}
	return nil
}

// PushedMany records the states a destination accepted, for records of one
// object type, in one transaction together with their links: a state that is
// not Deleted links its record to its ExternalID (as LinkMany does, with its
// ErrConflict); a Deleted state with no ExternalID unlinks its record (an
// archive). It is all or nothing. A stored state is replaced only by a newer
// one (a higher Seq; or the same Seq and a Version no lower), so the state
// never moves backwards when an older write finishes last.
func (l *Links) PushedMany(ctx context.Context, destination, objectType string, states []Pushed) error {
	if len(states) == 0 {
		return nil
	}
	return dialectsql.InTxRetry(ctx, l.db, l.st.Retryable, "links", func(tx *sql.Tx) error {
		return l.PushedManyTx(ctx, tx, destination, objectType, states)
	})
}

type pushedRow struct {
	R string          `json:"r"`
	E string          `json:"e"`
	V int64           `json:"v"`
	F json.RawMessage `json:"f"`
	D int             `json:"d"`
	T int64           `json:"t"`
	S int64           `json:"s"`
}

// checkLinkedTo fails with ErrLinkMoved when a state's record is no longer
// linked to its LinkedTo: writing the state would put back the link the
// write started from, over the one another writer (the inbound side, after
// a merge) set meanwhile.
func (l *Links) checkLinkedTo(ctx context.Context, tx store.DBTX, destination, objectType string, states []Pushed) error {
	var recs []string
	for _, p := range states {
		if p.LinkedTo != nil {
			recs = append(recs, p.RecordID)
		}
	}
	if len(recs) == 0 {
		return nil
	}
	have, err := l.LookupManyTx(ctx, tx, destination, objectType, recs)
	if err != nil {
		return err
	}
	for _, p := range states {
		if p.LinkedTo != nil && have[p.RecordID] != *p.LinkedTo {
			return fmt.Errorf("%w: %s %s %s is linked to %q, not %q as when its write was planned", ErrLinkMoved, destination, objectType, p.RecordID, have[p.RecordID], *p.LinkedTo)
		}
	}
	return nil
}

// PushedManyTx is PushedMany inside the caller's transaction.
func (l *Links) PushedManyTx(ctx context.Context, tx store.DBTX, destination, objectType string, states []Pushed) error {
	pairs := map[string]string{}
	var unlink []string
	byRec := map[string]Pushed{}
	for _, p := range states {
		if err := check(destination, objectType, p.RecordID); err != nil {
			return err
		}
		switch {
		case !p.Deleted && p.ExternalID == "":
			return fmt.Errorf("%w: pushed state of %s/%s/%s has no external id", ErrInvalid, destination, objectType, p.RecordID)
		case !p.Deleted && p.LinkedTo != nil && *p.LinkedTo == p.ExternalID:
			// The write went to the object the record was linked to: no
			// link to write, and none may be, even if another writer moved
			// it after checkLinkedTo read it (this state is then stale, and
			// readers ignore it).
		case !p.Deleted:
			pairs[p.RecordID] = p.ExternalID
		case p.ExternalID == "":
			unlink = append(unlink, p.RecordID)
		}
		byRec[p.RecordID] = p // the last state of a record wins
		if len(p.Carried) > 0 {
			if err := l.clearOwedTx(ctx, tx, destination, objectType, p.RecordID, p.Carried); err != nil {
				return err
			}
		}
	}
	if err := l.checkLinkedTo(ctx, tx, destination, objectType, states); err != nil {
		return err
	}
	if err := l.LinkManyTx(ctx, tx, destination, objectType, pairs); err != nil {
		return err
	}
	slices.Sort(unlink)
	for _, rec := range slices.Compact(unlink) {
		if err := l.UnlinkTx(ctx, tx, destination, objectType, rec); err != nil {
			return err
		}
	}
	recs := slices.Sorted(maps.Keys(byRec)) // one order for every writer
	for len(recs) > 0 {
		chunk := recs[:min(len(recs), LookupManyMax)]
		recs = recs[len(chunk):]
		rows := make([]pushedRow, len(chunk))
		for i, rec := range chunk {
			p := byRec[rec]
			row := pushedRow{R: rec, E: p.ExternalID, V: p.Version, F: json.RawMessage("null"), T: p.EventDate.UnixMicro(), S: p.Seq}
			if p.Deleted {
				row.D = 1
			} else if p.Fields != nil {
				f, err := json.Marshal(p.Fields)
				if err != nil {
					return fmt.Errorf("links: encode pushed fields of %s/%s/%s: %w", destination, objectType, rec, err)
				}
				row.F = f
			}
			rows[i] = row
		}
		list, err := json.Marshal(rows)
		if err != nil {
			return fmt.Errorf("links: put pushed: %w", err)
		}
		now := dialectsql.Time(l.dialect, l.st.Now())
		if _, err := tx.ExecContext(ctx, l.q.Get("put_pushed_many"), destination, objectType, now, string(list)); err != nil {
			return fmt.Errorf("links: put %d pushed states %s/%s: %w", len(chunk), destination, objectType, err)
		}
	}
	return nil
}

// ForgetPushedTx removes the pushed state of a record on destination inside
// the caller's transaction, values and all: a privacy deletion keeps none of
// a record's values, and HubSpot's own privacy deletion sends no write that
// would replace the state. A record with none is not an error.
func (l *Links) ForgetPushedTx(ctx context.Context, tx store.DBTX, destination, objectType, recordID string) error {
	if err := check(destination, objectType, recordID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, l.q.Get("pushed_forget"), destination, objectType, recordID); err != nil {
		return fmt.Errorf("links: forget pushed state %s/%s/%s: %w", destination, objectType, recordID, err)
	}
	return nil
}
