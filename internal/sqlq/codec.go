package sqlq

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

// The engine's codecs are internal/dialectsql's, under the names the
// repositories use.

func (s *Store) encodeTime(t time.Time) any { return dialectsql.Time(s.d.Name, t) }

func (s *Store) encodeTimePtr(t *time.Time) any { return dialectsql.NullTime(s.d.Name, t) }

// timeCol scans a timestamp column into dst, or a nullable one into ptr.
type timeCol struct {
	dst *time.Time
	ptr **time.Time
}

func (c timeCol) Scan(src any) error {
	if c.ptr != nil {
		return dialectsql.NullTimeDest(c.ptr).Scan(src)
	}
	if src == nil {
		return fmt.Errorf("sqlq: NULL timestamp in a NOT NULL column")
	}
	return dialectsql.TimeDest(c.dst).Scan(src)
}

// jsonCol scans a JSON column into a copy of its bytes; NULL gives nil.
type jsonCol struct{ dst *json.RawMessage }

func (c jsonCol) Scan(src any) error { return dialectsql.JSONDest(c.dst).Scan(src) }

// encodeJSON binds a JSON document as text; nil or empty binds NULL.
func encodeJSON(m json.RawMessage) any { return dialectsql.NullJSON(m) }

// nullString scans a nullable text column into a plain string.
type nullString struct{ dst *string }

func (c nullString) Scan(src any) error {
	var ns sql.NullString
	if err := ns.Scan(src); err != nil {
		return err
	}
	*c.dst = ns.String
	return nil
}

// stateTargets returns scan targets for the queue-state columns, in the order
// of stateColumns.
func stateTargets(q *store.QueueState) []any {
	return []any{
		&q.Seq, &q.Lane, (*string)(&q.Status), &q.RetryCount, &q.Attempt, nullString{&q.ErrorMessage},
		timeCol{dst: &q.NextAttemptDate}, nullString{&q.LeaseOwner}, timeCol{ptr: &q.LeaseExpiresDate},
		timeCol{ptr: &q.ProcessedDate}, timeCol{dst: &q.CreatedDate}, timeCol{dst: &q.LastModifiedDate},
	}
}

// stateColumns are the bookkeeping columns every queue has.
var stateColumns = []string{
	"Seq", "Lane", "Status", "RetryCount", "Attempt", "ErrorMessage", "NextAttemptDate",
	"LeaseOwner", "LeaseExpiresDate", "ProcessedDate", "CreatedDate", "LastModifiedDate",
}

// idsJSON binds a list of ids as one JSON array parameter.
func idsJSON(ids []string) string {
	b, _ := json.Marshal(ids) // []string always marshals
	return string(b)
}

type leaseJSON struct {
	ID      string `json:"id"`
	Attempt int    `json:"attempt"`
}

// leasesJSON binds leases as one JSON array of {"id","attempt"} objects.
func leasesJSON(ls []store.Lease) string {
	out := make([]leaseJSON, len(ls))
	for i, l := range ls {
		out[i] = leaseJSON{ID: l.ID, Attempt: l.Attempt}
	}
	b, _ := json.Marshal(out)
	return string(b)
}
