package sqlq

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hubsync/hubsync/store"
)

// encodeTime converts t to the dialect's timestamp encoding: UTC with microsecond
// precision, as unix microseconds where the schema stores INTEGER (SQLite).
func (s *Store) encodeTime(t time.Time) any {
	t = t.UTC().Truncate(time.Microsecond)
	if s.d.TimeMicros {
		return t.UnixMicro()
	}
	return t
}

func (s *Store) encodeTimePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return s.encodeTime(*t)
}

// timeCol scans a timestamp stored either way (INTEGER unix microseconds or a
// native timestamp) into a UTC time; NULL leaves a nil pointer when ptr is set.
type timeCol struct {
	dst *time.Time
	ptr **time.Time
}

func (c timeCol) Scan(src any) error {
	var t time.Time
	switch v := src.(type) {
	case nil:
		if c.ptr != nil {
			*c.ptr = nil
			return nil
		}
		return fmt.Errorf("sqlq: NULL timestamp in a NOT NULL column")
	case int64:
		t = time.UnixMicro(v)
	case time.Time:
		t = v
	case []byte:
		return c.parse(string(v))
	case string:
		return c.parse(v)
	default:
		return fmt.Errorf("sqlq: cannot scan %T into a timestamp", src)
	}
	return c.set(t)
}

func (c timeCol) parse(s string) error {
	for _, layout := range []string{"2006-01-02 15:04:05.999999", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return c.set(t)
		}
	}
	return fmt.Errorf("sqlq: cannot parse timestamp %q", s)
}

func (c timeCol) set(t time.Time) error {
	t = t.UTC()
	if c.ptr != nil {
		*c.ptr = &t
	} else {
		*c.dst = t
	}
	return nil
}

// jsonCol scans a JSON column into a copy of its bytes; NULL gives nil.
type jsonCol struct{ dst *json.RawMessage }

func (c jsonCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.dst = nil
	case []byte:
		*c.dst = append(json.RawMessage(nil), v...)
	case string:
		*c.dst = json.RawMessage(v)
	default:
		return fmt.Errorf("sqlq: cannot scan %T into JSON", src)
	}
	return nil
}

// encodeJSON binds a JSON document as text; nil or empty binds NULL.
func encodeJSON(m json.RawMessage) any {
	if len(m) == 0 {
		return nil
	}
	return string(m)
}

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
		(*string)(&q.Status), &q.RetryCount, &q.Attempt, nullString{&q.ErrorMessage},
		timeCol{dst: &q.NextAttemptDate}, nullString{&q.LeaseOwner}, timeCol{ptr: &q.LeaseExpiresDate},
		timeCol{ptr: &q.ProcessedDate}, timeCol{dst: &q.CreatedDate}, timeCol{dst: &q.LastModifiedDate},
	}
}

// stateColumns are the bookkeeping columns every queue has.
var stateColumns = []string{
	"Status", "RetryCount", "Attempt", "ErrorMessage", "NextAttemptDate",
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
