package links

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/hubsync/hubsync/internal/dialectsql"
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
	err := eachChunk(destination, objectType, recordIDs, func(chunk []string) error {
		got, err := l.many(ctx, tx, "lookup_many", destination, objectType, chunk)
		maps.Copy(out, got)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachChunk validates recordIDs and hands them to fn LookupManyMax at a time,
// so one query's parameter stays bounded.
func eachChunk(destination, objectType string, recordIDs []string, fn func(chunk []string) error) error {
	for chunk := range slices.Chunk(recordIDs, LookupManyMax) {
		for _, id := range chunk {
			if err := check(destination, objectType, id); err != nil {
				return err
			}
		}
		if err := fn(chunk); err != nil {
			return err
		}
	}
	return nil
}

// many runs a lookup of many ids; the map is keyed by the first column
// (record → external), but by the second for lookup_records_many (external →
// record).
func (l *Links) many(ctx context.Context, tx store.DBTX, query, destination, objectType string, ids []string) (map[string]string, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("links: %s: %w", query, err)
	}
	rows, err := tx.QueryContext(ctx, l.q.Get(query), destination, objectType, string(list))
	if err != nil {
		return nil, fmt.Errorf("links: %s %s/%s (%d ids): %w", query, destination, objectType, len(ids), err)
	}
	defer rows.Close()
	out := make(map[string]string, len(ids))
	for rows.Next() {
		var rec, ext string
		if err := rows.Scan(&rec, &ext); err != nil {
			return nil, fmt.Errorf("links: %s %s/%s: %w", query, destination, objectType, err)
		}
		if query == "lookup_records_many" {
			out[ext] = rec
		} else {
			out[rec] = ext
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("links: %s %s/%s: %w", query, destination, objectType, err)
	}
	return out, nil
}

// LookupRecordsMany returns the records linked to the external ids among
// externalIDs on destination, by external id, in one query per
// LookupManyMax ids. Ids without a link are absent from the map.
func (l *Links) LookupRecordsMany(ctx context.Context, destination, objectType string, externalIDs []string) (map[string]string, error) {
	out := make(map[string]string, len(externalIDs))
	err := eachChunk(destination, objectType, externalIDs, func(chunk []string) error {
		got, err := l.many(ctx, l.db, "lookup_records_many", destination, objectType, chunk)
		maps.Copy(out, got)
		return err
	})
	if err != nil {
		return nil, err
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
	return dialectsql.InTxRetry(ctx, l.db, l.st.Retryable, "links", func(tx *sql.Tx) error {
		return l.LinkManyTx(ctx, tx, destination, objectType, pairs)
	})
}

// LinkManyTx is LinkMany inside the caller's transaction. It reads the
// records' current links and the external ids' owners in one query each,
// writes every new link in one statement, whatever the number of pairs (up to
// LookupManyMax at a time), and reads the links back unless that statement
// wrote every one of them. As with LinkTx, a
// concurrent writer of the same link is no conflict, whichever commits first;
// one that linked an external id to another record is ErrConflict.
func (l *Links) LinkManyTx(ctx context.Context, tx store.DBTX, destination, objectType string, pairs map[string]string) error {
	ids := make([]string, 0, len(pairs))
	for rec, ext := range pairs {
		if err := check(destination, objectType, rec); err != nil {
			return err
		}
		if ext == "" {
			return fmt.Errorf("%w: empty external id for %s/%s/%s", ErrInvalid, destination, objectType, rec)
		}
		ids = append(ids, rec)
	}
	slices.Sort(ids) // one order for every writer
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), LookupManyMax)]
		ids = ids[len(chunk):]
		if err := l.linkChunk(ctx, tx, destination, objectType, chunk, pairs); err != nil {
			return err
		}
	}
	return nil
}

func (l *Links) linkChunk(ctx context.Context, tx store.DBTX, destination, objectType string, recs []string, pairs map[string]string) error {
	have, err := l.LookupManyTx(ctx, tx, destination, objectType, recs)
	if err != nil {
		return err
	}
	var todo [][2]string
	var exts []string
	for _, rec := range recs {
		if have[rec] != pairs[rec] {
			todo = append(todo, [2]string{rec, pairs[rec]})
			exts = append(exts, pairs[rec])
		}
	}
	if len(todo) == 0 {
		return nil
	}
	owners, err := l.many(ctx, tx, "lookup_records_many", destination, objectType, exts)
	if err != nil {
		return err
	}
	seen := map[string]string{}
	for _, p := range todo {
		rec, ext := p[0], p[1]
		if owner, ok := owners[ext]; ok && owner != rec {
			return fmt.Errorf("%w: %s %s %s is linked to record %s, not %s", ErrConflict, destination, objectType, ext, owner, rec)
		}
		if other, ok := seen[ext]; ok {
			return fmt.Errorf("%w: %s %s %s is given to both record %s and %s", ErrConflict, destination, objectType, ext, other, rec)
		}
		seen[ext] = rec
	}
	now := dialectsql.Time(l.dialect, l.st.Now())
	var fresh [][2]string
	for _, p := range todo {
		if have[p[0]] == "" {
			fresh = append(fresh, p)
			continue
		}
		// Re-linked (a merge): rare, one statement each.
		if _, err := tx.ExecContext(ctx, l.q.Get("relink"), p[1], now, destination, objectType, p[0]); err != nil {
			return fmt.Errorf("links: relink %s/%s/%s: %w", destination, objectType, p[0], err)
		}
	}
	if len(fresh) > 0 {
		list, err := json.Marshal(fresh)
		if err != nil {
			return fmt.Errorf("links: link many: %w", err)
		}
		res, err := tx.ExecContext(ctx, l.q.Get("link_many"), destination, objectType, now, now, string(list))
		if err != nil {
			return fmt.Errorf("links: link %d %s/%s: %w", len(fresh), destination, objectType, err)
		}
		// The read-back finds the pairs the insert skipped for another
		// writer's link. When it inserted every pair, and relinked none,
		// each link is the one this transaction wrote and holds: the
		// read-back would find nothing, and one round trip of every
		// outbound cycle is saved. Not on MySQL, whose count includes a
		// skipped pair when the connection asks for found rows.
		if n, err := res.RowsAffected(); err == nil && n == int64(len(todo)) && len(fresh) == len(todo) && l.dialect != store.MySQL {
			return nil
		}
	}
	return l.checkLinked(ctx, tx, destination, objectType, todo)
}

// checkLinked reads the links of pairs back after they were written: a writer
// that linked a record or an external id between this transaction's checks
// and its write (and committed first), or at any time before the write of
// LinkNewTx, which checks nothing first, made the write skip that pair. The
// same link from both is fine; anything else is ErrConflict.
func (l *Links) checkLinked(ctx context.Context, tx store.DBTX, destination, objectType string, pairs [][2]string) error {
	recs := make([]string, len(pairs))
	for i, p := range pairs {
		recs[i] = p[0]
	}
	got, err := l.many(ctx, tx, "link_check_many", destination, objectType, recs)
	if err != nil {
		return err
	}
	for _, p := range pairs {
		rec, ext := p[0], p[1]
		if got[rec] == ext {
			continue
		}
		if got[rec] != "" {
			return fmt.Errorf("%w: %s %s %s is linked to %s, not %s", ErrConflict, destination, objectType, rec, got[rec], ext)
		}
		owner := "another record"
		if owners, err := l.many(ctx, tx, "lookup_records_many", destination, objectType, []string{ext}); err == nil && owners[ext] != "" {
			owner = "record " + owners[ext]
		}
		return fmt.Errorf("%w: %s %s %s is linked to %s, not %s", ErrConflict, destination, objectType, ext, owner, rec)
	}
	return nil
}
