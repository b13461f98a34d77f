package links

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

// AddOwed records that destination is owed fields (local field names) of a
// record: changes of events that were dead-lettered and that no write has
// carried yet (table hubsync_owed). The list only grows until a write that
// carries fields clears them (Pushed.Carried).
func (l *Links) AddOwed(ctx context.Context, destination, objectType, recordID string, fields []string) error {
	if err := check(destination, objectType, recordID); err != nil {
		return err
	}
	if len(fields) == 0 {
		return nil
	}
	return dialectsql.InTxRetry(ctx, l.db, l.st.Retryable, "links", func(tx *sql.Tx) error {
		have, err := l.owedOne(ctx, tx, destination, objectType, recordID)
		if err != nil {
			return err
		}
		return l.putOwed(ctx, tx, destination, objectType, recordID, append(have, fields...))
	})
}

// LookupOwedMany returns the owed fields of the records among recordIDs that
// have any, by record id, in one query per LookupManyMax ids.
func (l *Links) LookupOwedMany(ctx context.Context, destination, objectType string, recordIDs []string) (map[string][]string, error) {
	out := map[string][]string{}
	err := eachChunk(destination, objectType, recordIDs, func(chunk []string) error {
		list, err := json.Marshal(chunk)
		if err != nil {
			return fmt.Errorf("links: lookup owed: %w", err)
		}
		return l.owedChunk(ctx, destination, objectType, string(list), out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (l *Links) owedChunk(ctx context.Context, destination, objectType, list string, out map[string][]string) error {
	rows, err := l.db.QueryContext(ctx, l.q.Get("lookup_owed_many"), destination, objectType, list)
	if err != nil {
		return fmt.Errorf("links: lookup owed %s/%s: %w", destination, objectType, err)
	}
	defer rows.Close()
	for rows.Next() {
		var rec, fields string
		if err := rows.Scan(&rec, &fields); err != nil {
			return fmt.Errorf("links: lookup owed %s/%s: %w", destination, objectType, err)
		}
		var f []string
		if err := json.Unmarshal([]byte(fields), &f); err != nil {
			return fmt.Errorf("links: decode owed fields of %s/%s/%s: %w", destination, objectType, rec, err)
		}
		if len(f) > 0 {
			out[rec] = f
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("links: lookup owed %s/%s: %w", destination, objectType, err)
	}
	return nil
}

// clearOwedTx removes carried from the fields owed for a record, inside tx.
func (l *Links) clearOwedTx(ctx context.Context, tx store.DBTX, destination, objectType, recordID string, carried []string) error {
	have, err := l.owedOne(ctx, tx, destination, objectType, recordID)
	if err != nil || len(have) == 0 {
		return err
	}
	left := slices.DeleteFunc(have, func(f string) bool { return slices.Contains(carried, f) })
	return l.putOwed(ctx, tx, destination, objectType, recordID, left)
}

func (l *Links) owedOne(ctx context.Context, tx store.DBTX, destination, objectType, recordID string) ([]string, error) {
	var fields string
	err := tx.QueryRowContext(ctx, l.q.Get("owed_get"), destination, objectType, recordID).Scan(&fields)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("links: read owed fields of %s/%s/%s: %w", destination, objectType, recordID, err)
	}
	var f []string
	if err := json.Unmarshal([]byte(fields), &f); err != nil {
		return nil, fmt.Errorf("links: decode owed fields of %s/%s/%s: %w", destination, objectType, recordID, err)
	}
	return f, nil
}

// putOwed stores fields (sorted, without duplicates) as the record's owed
// fields, or forgets the record when there are none.
func (l *Links) putOwed(ctx context.Context, tx store.DBTX, destination, objectType, recordID string, fields []string) error {
	if len(fields) == 0 {
		if _, err := tx.ExecContext(ctx, l.q.Get("owed_delete"), destination, objectType, recordID); err != nil {
			return fmt.Errorf("links: clear owed fields of %s/%s/%s: %w", destination, objectType, recordID, err)
		}
		return nil
	}
	slices.Sort(fields)
	b, err := json.Marshal(slices.Compact(fields))
	if err != nil {
		return fmt.Errorf("links: encode owed fields: %w", err)
	}
	if _, err := tx.ExecContext(ctx, l.q.Get("owed_put"), destination, objectType, recordID, string(b),
		dialectsql.Time(l.dialect, l.st.Now())); err != nil {
		return fmt.Errorf("links: put owed fields of %s/%s/%s: %w", destination, objectType, recordID, err)
	}
	return nil
}
