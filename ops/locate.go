package ops

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

// LocateEvent says where an event id is: in which queue and with which
// status, or discarded, or nowhere (cleaned up, or never an event's id). A
// retry or discard by id that matched no dead letter tells the operator
// with it why.
func LocateEvent(ctx context.Context, st store.Store, id string) (string, error) {
	q, err := dialectsql.Load(sqlFS, "sql", st.Dialect())
	if err != nil {
		return "", fmt.Errorf("ops: %w", err)
	}
	var dir, reason string
	var at time.Time
	err = st.DB().QueryRowContext(ctx, q.Get("discarded_get"), id).Scan(&dir, &reason, dialectsql.TimeDest(&at))
	switch {
	case err == nil:
		return fmt.Sprintf("%s: a discarded %s dead letter (%s, reason %q)", id, dir, at.UTC().Format(time.RFC3339), reason), nil
	case !errors.Is(err, sql.ErrNoRows):
		return "", fmt.Errorf("ops: look up discarded event %s: %w", id, err)
	}
	for _, d := range []store.Direction{store.DirectionOutbound, store.DirectionInbound, store.DirectionInternal} {
		qu, err := queueOf(st, d)
		if err != nil {
			return "", err
		}
		h, err := qu.get(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue
		case err != nil:
			return "", fmt.Errorf("ops: look up %s event %s: %w", d, id, err)
		}
		if h.Status == store.StatusFailed {
			return fmt.Sprintf("%s: a dead letter of the %s queue", id, d), nil
		}
		return fmt.Sprintf("%s: a %s event of the %s queue, not a dead letter", id, h.Status, d), nil
	}
	return fmt.Sprintf("%s: no event has this id (a processed event past its retention is cleaned up, and so is a discarded dead letter past HUBSYNC_DISCARDED_RETENTION, 90 days by default)", id), nil
}

// NotDeadLetters returns, for the ids that are not dead letters of
// direction dir's queue, where each is (LocateEvent), for a retry or discard
// by id to say which ids it leaves alone and why. It reads up to 4 rows per
// id.
func NotDeadLetters(ctx context.Context, st store.Store, dir store.Direction, ids []string) ([]string, error) {
	qu, err := queueOf(st, dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range ids {
		h, err := qu.get(ctx, id)
		if err == nil && h.Status == store.StatusFailed {
			continue
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("ops: look up %s event %s: %w", dir, id, err)
		}
		where, err := LocateEvent(ctx, st, id)
		if err != nil {
			return nil, err
		}
		out = append(out, where)
	}
	return out, nil
}
