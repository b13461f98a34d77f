package dialectsql

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/hubsync/hubsync/store"
)

// Time encodes t for a timestamp column: unix microseconds for SQLite (its
// columns are INTEGER), a UTC time truncated to microseconds (the columns'
// precision) elsewhere.
func Time(d store.Dialect, t time.Time) any {
	t = t.UTC().Truncate(time.Microsecond)
	if d == store.SQLite {
		return t.UnixMicro()
	}
	return t
}

// NullTime is Time for a nullable column: nil binds NULL.
func NullTime(d store.Dialect, t *time.Time) any {
	if t == nil {
		return nil
	}
	return Time(d, *t)
}

// JSON encodes a JSON document for a JSON/JSONB/TEXT column. It is passed as a
// string: SQLite's STRICT TEXT columns refuse blobs, and PostgreSQL and MySQL
// parse a string into their JSON types.
func JSON(b []byte) any { return string(b) }

// NullJSON is JSON for a nullable column: nil or empty binds NULL.
func NullJSON(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// TimeDest scans a timestamp column of any dialect into *t, in UTC; NULL gives
// the zero time.
func TimeDest(t *time.Time) *TimeScanner { return &TimeScanner{t: t} }

// NullTimeDest scans a nullable timestamp column of any dialect into *t, in
// UTC; NULL gives nil.
func NullTimeDest(t **time.Time) *TimeScanner { return &TimeScanner{ptr: t} }

// TimeScanner is a sql.Scanner for timestamp columns: integers are unix
// microseconds (SQLite), time.Time values are taken as they are, text is
// parsed.
type TimeScanner struct {
	t   *time.Time
	ptr **time.Time
}

// Scan implements sql.Scanner.
func (s *TimeScanner) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		return s.set(time.UnixMicro(v))
	case time.Time:
		return s.set(v)
	case []byte:
		return s.parse(string(v))
	case string:
		return s.parse(v)
	case nil:
		if s.ptr != nil {
			*s.ptr = nil
		} else {
			*s.t = time.Time{}
		}
		return nil
	default:
		return fmt.Errorf("dialectsql: cannot scan %T into a time", src)
	}
}

func (s *TimeScanner) set(t time.Time) error {
	t = t.UTC()
	if s.ptr != nil {
		*s.ptr = &t
	} else {
		*s.t = t
	}
	return nil
}

func (s *TimeScanner) parse(v string) error {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return s.set(time.UnixMicro(n))
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999", time.RFC3339Nano, "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, v); err == nil {
			return s.set(t)
		}
	}
	return fmt.Errorf("dialectsql: cannot parse time %q", v)
}

// JSONDest scans a JSON column of any dialect into a copy of its bytes; NULL
// gives nil.
func JSONDest(m *json.RawMessage) JSONScanner { return JSONScanner{m} }

// JSONScanner is a sql.Scanner for JSON columns.
type JSONScanner struct{ dst *json.RawMessage }

// Scan implements sql.Scanner.
func (c JSONScanner) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.dst = nil
	case []byte:
		*c.dst = append(json.RawMessage(nil), v...)
	case string:
		*c.dst = json.RawMessage(v)
	default:
		return fmt.Errorf("dialectsql: cannot scan %T into JSON", src)
	}
	return nil
}
