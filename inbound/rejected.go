package inbound

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

//go:embed sql
var sqlFS embed.FS

// Reasons an event of a delivery is refused while the rest is stored
// (RejectedEvent.Reason, the reason label of ReceiverHooks.OnEventRejected).
const (
	// EventRejectMalformed: the event is not a well-formed HubSpot event.
	EventRejectMalformed = "malformed"
	// EventRejectOccurredAt: occurredAt is missing, zero, negative or not a
	// representable time.
	EventRejectOccurredAt = "occurred_at_invalid"
	// EventRejectFuture: occurredAt lies more than MaxEventSkew ahead of now.
	// The delivery is then answered 503, so that HubSpot delivers it again.
	EventRejectFuture = "occurred_at_future"
	// EventRejectForeignPortal: the event is of another HubSpot account than
	// ReceiverConfig.PortalID.
	EventRejectForeignPortal = "foreign_portal"
)

// MaxEventSkewDefault is how far ahead of the receiver's (or worker's) clock an
// event's occurredAt may lie before the event is refused.
const MaxEventSkewDefault = 5 * time.Minute

// maxRejectedRawBytes bounds the raw event kept per reject.
const maxRejectedRawBytes = 64 << 10

// RejectedEvent is one event of a delivery that the Receiver refused while it
// stored the others.
type RejectedEvent struct {
	// ID is a UUIDv7, so ids sort by time of receipt.
	ID string `json:"id"`
	// Reason is one of the EventReject* values.
	Reason string `json:"reason"`
	// Message says what is wrong, e.g. "event 3: occurredAt: required positive epoch milliseconds".
	Message string `json:"message"`
	// RawPayload is the event as sent (cut at 64 KiB), as text: it may not be JSON.
	RawPayload string `json:"rawPayload"`
	// ReceivedAt is when the receiver got the delivery.
	ReceivedAt time.Time `json:"receivedAt"`

	occurredAt int64 // the event's occurredAt (ms), for EventRejectFuture
}

// RejectedRecorder keeps rejected events where an operator can see them;
// *RejectedLog implements it.
type RejectedRecorder interface {
	// RecordRejected stores evs. Storing the same reject twice (a retried
	// delivery) keeps one.
	RecordRejected(ctx context.Context, evs []RejectedEvent) error
}

// RejectedLog is the hubsync_rejected_webhook table: rejected webhook events
// with their reason, listed by GET /admin/rejected and cleaned up with the
// inbound retention.
type RejectedLog struct {
	db        *sql.DB
	retryable func(error) bool // the store's: a deadlock's transaction runs again
	dialect   store.Dialect
	q         *dialectsql.Queries
}

var _ RejectedRecorder = (*RejectedLog)(nil)

// NewRejectedLog returns the rejected-event log on st's database, which must
// have hubsync's migrations applied.
func NewRejectedLog(st store.Store) (*RejectedLog, error) {
	q, err := dialectsql.Load(sqlFS, "sql", st.Dialect())
	if err != nil {
		return nil, fmt.Errorf("inbound: %w", err)
	}
	return &RejectedLog{db: st.DB(), retryable: st.Retryable, dialect: st.Dialect(), q: q}, nil
}

// RecordRejected stores evs in one transaction; an event without ID gets one.
func (l *RejectedLog) RecordRejected(ctx context.Context, evs []RejectedEvent) error {
	if len(evs) == 0 {
		return nil
	}
	return dialectsql.InTxRetry(ctx, l.db, l.retryable, "inbound: record rejected events", func(tx *sql.Tx) error {
		for _, ev := range evs {
			id := cmp.Or(ev.ID, uuid.Must(uuid.NewV7()).String())
			sum := sha256.Sum256([]byte(ev.Reason + "\x00" + ev.RawPayload))
			if _, err := tx.ExecContext(ctx, l.q.Get("rejected_insert"), id, hex.EncodeToString(sum[:]), ev.Reason,
				ev.Message, ev.RawPayload, dialectsql.Time(l.dialect, ev.ReceivedAt.UTC().Truncate(time.Microsecond))); err != nil {
				return fmt.Errorf("inbound: record rejected event: %w", err)
			}
		}
		return nil
	})
}

// RejectedFilter pages through List.
type RejectedFilter struct {
	// Limit is the page size; default 100, at most 1000.
	Limit int
	// Before lists the rejects older than this id (the last id of the
	// previous page).
	Before string
}

// List returns rejected events, newest first.
func (l *RejectedLog) List(ctx context.Context, f RejectedFilter) ([]RejectedEvent, error) {
	limit := min(cmp.Or(f.Limit, 100), 1000)
	rows, err := l.db.QueryContext(ctx, l.q.Get("rejected_list"), f.Before, f.Before, limit)
	if err != nil {
		return nil, fmt.Errorf("inbound: list rejected events: %w", err)
	}
	defer rows.Close()
	out := []RejectedEvent{}
	for rows.Next() {
		var ev RejectedEvent
		if err := rows.Scan(&ev.ID, &ev.Reason, &ev.Message, &ev.RawPayload, dialectsql.TimeDest(&ev.ReceivedAt)); err != nil {
			return nil, fmt.Errorf("inbound: list rejected events: %w", err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("inbound: list rejected events: %w", err)
	}
	return out, nil
}

// Cleanup deletes rejects received before cutoff, batchSize rows per
// statement, and returns how many it deleted.
func (l *RejectedLog) Cleanup(ctx context.Context, cutoff time.Time, batchSize int) (int64, error) {
	batchSize = cmp.Or(batchSize, store.CleanupBatchDefault)
	total, err := dialectsql.DeleteBatches(ctx, batchSize, func() (int64, error) {
		res, err := l.db.ExecContext(ctx, l.q.Get("rejected_cleanup"), dialectsql.Time(l.dialect, cutoff.UTC()), batchSize)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	})
	if err != nil {
		return total, fmt.Errorf("inbound: clean up rejected events: %w", err)
	}
	return total, nil
}

// rawText returns an event's raw bytes as valid text of at most
// maxRejectedRawBytes.
func rawText(raw []byte) string {
	if len(raw) > maxRejectedRawBytes {
		raw = raw[:maxRejectedRawBytes]
	}
	// PostgreSQL's text holds no NUL; invalid UTF-8 is replaced.
	return strings.ReplaceAll(strings.ToValidUTF8(string(raw), "\uFFFD"), "\x00", "\uFFFD")
}
