package links

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/hubsync/hubsync/store"
)

// LookupManyMax is the most record ids one LookupMany query carries; longer
// lists are split into several queries.
const LookupManyMax = 1000

// LookupMany returns the external ids of the linked records among recordIDs
// on destination, by record id, in one query per LookupManyMax ids. Records
// without a link are absent from the map.
func (l *Links) LookupMany(ctx context.Context, destination, objectType string, recordIDs []string) (map[string]string, error) {
	return l.LookupManyTx(ctx, l.db, destination, objectType, recordIDs)
}

// LookupManyTx is LookupMany inside the caller's transaction.
func (l *Links) LookupManyTx(ctx context.Context, tx store.DBTX, destination, objectType string, recordIDs []string) (map[string]string, error) {
	out := make(map[string]string, len(recordIDs))
	for len(recordIDs) > 0 {
		chunk := recordIDs[:min(len(recordIDs), LookupManyMax)]
		recordIDs = recordIDs[len(chunk):]
		for _, id := range chunk {
			if err := check(destination, objectType, id); err != nil {
				return nil, err
			}
		}
		list, err := json.Marshal(chunk)
		if err != nil {
			return nil, fmt.Errorf("links: lookup many: %w", err)
		}
		rows, err := tx.QueryContext(ctx, l.q.Get("lookup_many"), destination, objectType, string(list))
		if err != nil {
			return nil, fmt.Errorf("links: lookup many %s/%s (%d ids): %w", destination, objectType, len(chunk), err)
		}
		for rows.Next() {
			var rec, ext string
			if err := rows.Scan(&rec, &ext); err != nil {
				rows.Close()
				return nil, fmt.Errorf("links: lookup many %s/%s: %w", destination, objectType, err)
			}
			out[rec] = ext
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("links: lookup many %s/%s: %w", destination, objectType, err)
		}
	}
	return out, nil
}

// LinkMany links many records of one object type on destination in one
// transaction: for each record id of pairs, Link(recordID, pairs[recordID]).
// It is all or nothing: when one pair fails (ErrConflict, ErrInvalid, a
// database error), nothing is linked and the error names that pair; link the
// pairs one by one to keep the others.
func (l *Links) LinkMany(ctx context.Context, destination, objectType string, pairs map[string]string) error {
	if len(pairs) == 0 {
		return nil
	}
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("links: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := l.LinkManyTx(ctx, tx, destination, objectType, pairs); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("links: commit: %w", err)
	}
	return nil
}

// LinkManyTx is LinkMany inside the caller's transaction. The current links
// of the records are read in one query, so a record already linked to its
// external id costs nothing more.
func (l *Links) LinkManyTx(ctx context.Context, tx store.DBTX, destination, objectType string, pairs map[string]string) error {
	ids := make([]string, 0, len(pairs))
	for rec := range pairs {
		ids = append(ids, rec)
	}
	slices.Sort(ids) // one order for every writer: no lock-order deadlocks
	have, err := l.LookupManyTx(ctx, tx, destination, objectType, ids)
	if err != nil {
		return err
	}
	for _, rec := range ids {
		ext := pairs[rec]
		if ext != "" && have[rec] == ext {
			continue
		}
		if err := l.LinkTx(ctx, tx, destination, objectType, rec, ext); err != nil {
			return err
		}
	}
	return nil
}
