package ops

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

// RecordEventsLimitDefault is how many events per direction RecordEvents lists
// by default.
const RecordEventsLimitDefault = 20

// RecordEvent is one queued event of a record, with its outcome.
type RecordEvent struct {
	ID           string          `json:"id"`
	Direction    store.Direction `json:"direction"`
	EventType    string          `json:"event_type"`
	Status       store.Status    `json:"status"`
	Attempt      int             `json:"attempt"`
	RetryCount   int             `json:"retry_count"`
	ErrorMessage string          `json:"error_message,omitempty"`
	Payload      json.RawMessage `json:"payload,omitempty"`
	CreatedDate  time.Time       `json:"created_date"`
	// ProcessedDate is set once the event was processed.
	ProcessedDate *time.Time `json:"processed_date,omitempty"`
}

// RecordEventsQuery names one record on both sides.
type RecordEventsQuery struct {
	// Key is the Source and Destination, e.g. "hubspot".
	Key        string
	ObjectType string
	// RecordID is the local record id (outbound events); ExternalID the
	// HubSpot id (inbound events), empty when the record has no link.
	RecordID   string
	ExternalID string
	// Limit is per direction; default RecordEventsLimitDefault, at most
	// DeadLetterLimitMax.
	Limit int
}

// RecordEvents lists a record's latest inbound and outbound events (processed
// ones included, until the cleanup deletes them), newest first.
func RecordEvents(ctx context.Context, st store.Store, q RecordEventsQuery) (inbound, outbound []RecordEvent, err error) {
	if q.Key == "" || q.ObjectType == "" {
		return nil, nil, fmt.Errorf("%w: record events need a key and an object type", ErrBadRequest)
	}
	if q.Limit < 0 {
		return nil, nil, fmt.Errorf("%w: limit %d is negative", ErrBadRequest, q.Limit)
	}
	sq, err := dialectsql.Load(sqlFS, "sql", st.Dialect())
	if err != nil {
		return nil, nil, fmt.Errorf("ops: %w", err)
	}
	limit := min(cmp.Or(q.Limit, RecordEventsLimitDefault), DeadLetterLimitMax)
	inbound, outbound = []RecordEvent{}, []RecordEvent{}
	if q.ExternalID != "" {
		if inbound, err = recordEvents(ctx, st, store.DirectionInbound, sq.Get("record_inbound"), q.Key, q.ExternalID, q.ObjectType, limit); err != nil {
			return nil, nil, err
		}
	}
	if q.RecordID != "" {
		if outbound, err = recordEvents(ctx, st, store.DirectionOutbound, sq.Get("record_outbound"), q.ObjectType, q.RecordID, q.Key, limit); err != nil {
			return nil, nil, err
		}
	}
	return inbound, outbound, nil
}

func recordEvents(ctx context.Context, st store.Store, dir store.Direction, query string, a, b, c string, limit int) ([]RecordEvent, error) {
	rows, err := st.DB().QueryContext(ctx, query, a, b, c, limit)
	if err != nil {
		return nil, fmt.Errorf("list %s events of a record: %w", dir, err)
	}
	defer rows.Close()
	out := []RecordEvent{}
	for rows.Next() {
		e := RecordEvent{Direction: dir}
		if err := rows.Scan(&e.ID, &e.EventType, &e.Status, &e.Attempt, &e.RetryCount, &e.ErrorMessage,
			dialectsql.JSONDest(&e.Payload), dialectsql.TimeDest(&e.CreatedDate), dialectsql.NullTimeDest(&e.ProcessedDate)); err != nil {
			return nil, fmt.Errorf("list %s events of a record: %w", dir, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list %s events of a record: %w", dir, err)
	}
	return out, nil
}
