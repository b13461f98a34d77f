package ops

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/internal/textcheck"
	"github.com/hubsync/hubsync/store"
)

//go:embed sql
var sqlFS embed.FS

// Limits of a discard request.
const (
	// DiscardReasonMax bounds a discard reason, in bytes.
	DiscardReasonMax = 1000
	// DiscardIDsMax bounds the ids of one discard or retry-by-id request.
	DiscardIDsMax = 1000
)

// DiscardRequest names dead letters of one queue to discard, with the reason
// kept beside each.
type DiscardRequest struct {
	Direction store.Direction `json:"direction"`
	IDs       []string        `json:"ids"`
	Reason    string          `json:"reason"`
}

// DiscardResult reports how many dead letters were discarded.
type DiscardResult struct {
	Discarded int64 `json:"discarded"`
}

func (r DiscardRequest) validate() error {
	if _, err := ParseDirection(string(r.Direction)); err != nil {
		return err
	}
	reason := strings.TrimSpace(r.Reason)
	switch {
	case len(r.IDs) == 0:
		return fmt.Errorf("%w: nothing selected; give the ids of the dead letters to discard", ErrBadRequest)
	case len(r.IDs) > DiscardIDsMax:
		return fmt.Errorf("%w: %d ids; discard at most %d at once", ErrBadRequest, len(r.IDs), DiscardIDsMax)
	case reason == "":
		return fmt.Errorf("%w: a reason is required; say why the events are discarded", ErrBadRequest)
	case len(reason) > DiscardReasonMax:
		return fmt.Errorf("%w: the reason has %d bytes; keep it under %d", ErrBadRequest, len(reason), DiscardReasonMax)
	case textcheck.Problem(reason) != "":
		return fmt.Errorf("%w: the reason %s", ErrBadRequest, textcheck.Problem(reason))
	}
	for _, id := range r.IDs {
		if id == "" || len(id) > 64 || textcheck.Problem(id) != "" {
			return fmt.Errorf("%w: id %q is not an event id", ErrBadRequest, id)
		}
	}
	return nil
}

// DiscardDeadLetters deletes the named dead letters from their queue and keeps
// each, with its error, payload and the reason given, in
// hubsync_discarded_event (ListDiscarded), in one transaction. Events that are
// not (or no longer) failed are left alone and not counted.
func DiscardDeadLetters(ctx context.Context, st store.Store, r DiscardRequest) (DiscardResult, error) {
	if err := r.validate(); err != nil {
		return DiscardResult{}, err
	}
	qu, err := queueOf(st, r.Direction)
	if err != nil {
		return DiscardResult{}, err
	}
	q, err := dialectsql.Load(sqlFS, "sql", st.Dialect())
	if err != nil {
		return DiscardResult{}, fmt.Errorf("ops: %w", err)
	}
	reason := strings.TrimSpace(r.Reason)
	now := st.Now().UTC().Truncate(time.Microsecond)
	// Read first, outside the transaction: on SQLite a read on another
	// connection while the transaction holds the writer would wait on it.
	var dead []store.EventHeader
	for _, id := range r.IDs {
		h, err := qu.get(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return DiscardResult{}, fmt.Errorf("discard %s: %w", id, err)
		}
		if h.Status == store.StatusFailed {
			dead = append(dead, h)
		}
	}
	var n int64
	err = dialectsql.InTxRetry(ctx, st.DB(), st.Retryable, "discard dead letters", func(tx *sql.Tx) error {
		n = 0
		for _, h := range dead {
			// The delete is fenced on the failed status: a dead letter
			// re-queued meanwhile is not discarded.
			res, err := tx.ExecContext(ctx, q.Get("discard_delete_"+string(r.Direction)), h.ID)
			if err != nil {
				return fmt.Errorf("discard %s: %w", h.ID, err)
			}
			if k, err := res.RowsAffected(); err != nil || k == 0 {
				continue
			}
			if _, err := tx.ExecContext(ctx, q.Get("discard_insert"), h.ID, string(h.Direction), h.Key, h.ObjectType, h.RecordID,
				h.EventType, h.Attempt, h.ErrorMessage, string(h.Payload), reason,
				dialectsql.Time(st.Dialect(), h.CreatedDate.UTC()), dialectsql.Time(st.Dialect(), now)); err != nil {
				return fmt.Errorf("keep discarded %s: %w", h.ID, err)
			}
			n++
		}
		return nil
	})
	if err != nil {
		return DiscardResult{}, err
	}
	return DiscardResult{Discarded: n}, nil
}

// Discarded is a dead letter an operator discarded, with the reason given.
type Discarded struct {
	DeadLetter
	Reason        string    `json:"reason"`
	DiscardedDate time.Time `json:"discarded_date"`
}

// ListDiscarded lists the latest discarded dead letters, newest first (limit
// defaults to DeadLetterLimitDefault, capped at DeadLetterLimitMax).
func ListDiscarded(ctx context.Context, st store.Store, limit int) ([]Discarded, error) {
	if limit < 0 {
		return nil, fmt.Errorf("%w: limit %d is negative", ErrBadRequest, limit)
	}
	q, err := dialectsql.Load(sqlFS, "sql", st.Dialect())
	if err != nil {
		return nil, fmt.Errorf("ops: %w", err)
	}
	rows, err := st.DB().QueryContext(ctx, q.Get("discarded_list"), min(cmp.Or(limit, DeadLetterLimitDefault), DeadLetterLimitMax))
	if err != nil {
		return nil, fmt.Errorf("list discarded: %w", err)
	}
	defer rows.Close()
	out := []Discarded{}
	for rows.Next() {
		var d Discarded
		var payload string
		if err := rows.Scan(&d.ID, &d.Direction, &d.Key, &d.ObjectType, &d.RecordID, &d.EventType, &d.Attempt, &d.ErrorMessage,
			&payload, &d.Reason, dialectsql.TimeDest(&d.CreatedDate), dialectsql.TimeDest(&d.DiscardedDate)); err != nil {
			return nil, fmt.Errorf("list discarded: %w", err)
		}
		if payload != "" {
			d.Payload = []byte(payload)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list discarded: %w", err)
	}
	return out, nil
}

// cleanupDiscarded deletes the dead letters discarded before cutoff,
// batchSize rows per statement, and returns how many it deleted.
func cleanupDiscarded(ctx context.Context, st store.Store, cutoff time.Time, batchSize int) (int64, error) {
	q, err := dialectsql.Load(sqlFS, "sql", st.Dialect())
	if err != nil {
		return 0, fmt.Errorf("ops: %w", err)
	}
	total, err := dialectsql.DeleteBatches(ctx, batchSize, func() (n int64, err error) {
		err = dialectsql.Retry(ctx, st.Retryable, func() error {
			res, err := st.DB().ExecContext(ctx, q.Get("discarded_cleanup"), dialectsql.Time(st.Dialect(), cutoff), batchSize)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		return n, err
	})
	if err != nil {
		return total, fmt.Errorf("ops: clean up discarded dead letters: %w", err)
	}
	return total, nil
}
