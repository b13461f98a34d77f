package drift

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/hubsync/hubsync/internal/dialectsql"
)

// cursor returns where a phase stopped for an object type, "" for the start.
func (s *Scanner) cursor(ctx context.Context, phase, objectType string) (string, error) {
	var after string
	err := s.db.QueryRowContext(ctx, s.q.Get("cursor_get"), phase, objectType).Scan(&after)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("drift: read cursor %s/%s: %w", phase, objectType, err)
	}
	return after, nil
}

func (s *Scanner) putCursor(ctx context.Context, phase, objectType, after string) error {
	now := dialectsql.Time(s.dialect, s.cfg.Now())
	if _, err := s.db.ExecContext(ctx, s.q.Get("cursor_put"), phase, objectType, after, now); err != nil {
		return fmt.Errorf("drift: store cursor %s/%s: %w", phase, objectType, err)
	}
	return nil
}

func (s *Scanner) clearCursor(ctx context.Context, phase, objectType string) error {
	if _, err := s.db.ExecContext(ctx, s.q.Get("cursor_delete"), phase, objectType); err != nil {
		return fmt.Errorf("drift: clear cursor %s/%s: %w", phase, objectType, err)
	}
	return nil
}

// Cursor returns where the records phase of an object type stopped ("" when
// a scan would start from the beginning), for operators and tests.
func (s *Scanner) Cursor(ctx context.Context, objectType string) (string, error) {
	return s.cursor(ctx, phaseRecords, objectType)
}

// openSet returns which of ids have events on their way in a queue
// (query open_outbound by record id, open_inbound by external id).
func (s *Scanner) openSet(ctx context.Context, query, key, objectType string, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.q.Get(query), key, objectType, string(list))
	if err != nil {
		return nil, fmt.Errorf("drift: %s %s: %w", query, objectType, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("drift: %s %s: %w", query, objectType, err)
		}
		out[id] = true
	}
	return out, rows.Err()
}

// failedSince counts the record's dead-lettered outbound events enqueued at
// or after since (its last write).
func (s *Scanner) failedSince(ctx context.Context, objectType, recordID string, since time.Time) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, s.q.Get("failed_since"), s.cfg.Destination, objectType, recordID, dialectsql.Time(s.dialect, since)).Scan(&n); err != nil {
		return 0, fmt.Errorf("drift: dead letters of %s/%s: %w", objectType, recordID, err)
	}
	return n, nil
}

// clocks returns the field clocks of records, by record and field.
func (s *Scanner) clocks(ctx context.Context, objectType string, ids []string) (map[string]map[string]time.Time, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.q.Get("clocks"), objectType, string(list))
	if err != nil {
		return nil, fmt.Errorf("drift: field clocks of %s: %w", objectType, err)
	}
	defer rows.Close()
	out := map[string]map[string]time.Time{}
	for rows.Next() {
		var rec, field string
		var t time.Time
		if err := rows.Scan(&rec, &field, dialectsql.TimeDest(&t)); err != nil {
			return nil, fmt.Errorf("drift: field clocks of %s: %w", objectType, err)
		}
		if out[rec] == nil {
			out[rec] = map[string]time.Time{}
		}
		out[rec][field] = t.UTC()
	}
	return out, rows.Err()
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }
