// Package dialectsql is the small amount of per-dialect plumbing that hubsync's
// SQL-backed packages (links, records) share: loading embedded .sql files with
// per-dialect overrides, rebinding ? placeholders for PostgreSQL, and encoding
// timestamps and JSON the way each schema stores them.
//
// A package keeps its queries as sql/NAME.sql (portable SQL with ? placeholders)
// and, where a dialect needs different SQL, sql/<dialect>/NAME.sql, which wins.
package dialectsql

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/hubsync/hubsync/store"
)

// Queries are the named SQL statements of one package for one dialect.
type Queries struct {
	dialect store.Dialect
	byName  map[string]string
}

// Load reads dir/*.sql and then dir/<dialect>/*.sql (overrides) from fsys, and
// rebinds placeholders for the dialect. Each file holds one statement; its name
// without .sql names it.
func Load(fsys fs.FS, dir string, d store.Dialect) (*Queries, error) {
	switch d {
	case store.SQLite, store.Postgres, store.MySQL:
	default:
		return nil, fmt.Errorf("dialectsql: unknown dialect %q", d)
	}
	q := &Queries{dialect: d, byName: map[string]string{}}
	for _, sub := range []string{dir, path.Join(dir, string(d))} {
		entries, err := fs.ReadDir(fsys, sub)
		if err != nil {
			if sub == dir {
				return nil, fmt.Errorf("dialectsql: read %s: %w", sub, err)
			}
			continue // no overrides for this dialect
		}
		for _, e := range entries {
			name, ok := strings.CutSuffix(e.Name(), ".sql")
			if e.IsDir() || !ok {
				continue
			}
			b, err := fs.ReadFile(fsys, path.Join(sub, e.Name()))
			if err != nil {
				return nil, fmt.Errorf("dialectsql: read %s: %w", e.Name(), err)
			}
			q.byName[name] = Rebind(d, strings.TrimRight(strings.TrimSpace(string(b)), ";"))
		}
	}
	return q, nil
}

// Get returns the statement called name. A missing name is a programming error
// that every test of the calling package hits, so it panics.
func (q *Queries) Get(name string) string {
	s, ok := q.byName[name]
	if !ok {
		panic(fmt.Sprintf("dialectsql: no query %q for %s", name, q.dialect))
	}
	return s
}

// Rebind turns ? placeholders into $1, $2, ... for PostgreSQL. A ? inside a
// single-quoted literal or a -- comment is left alone.
func Rebind(d store.Dialect, query string) string {
	if d != store.Postgres || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	n := 0
	inString, inComment := false, false
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case inComment:
			if c == '\n' {
				inComment = false
			}
		case inString:
			if c == '\'' {
				inString = false
			}
		case c == '\'':
			inString = true
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			inComment = true
		case c == '?':
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Time encodes t for a timestamp column: unix microseconds for SQLite, a UTC
// time truncated to microseconds (the columns' precision) elsewhere.
func Time(d store.Dialect, t time.Time) any {
	if d == store.SQLite {
		return t.UnixMicro()
	}
	return t.UTC().Truncate(time.Microsecond)
}

// JSON encodes a JSON document for a JSON/JSONB/TEXT column. It is passed as a
// string: SQLite's STRICT TEXT columns refuse blobs, and PostgreSQL and MySQL
// parse a string into their JSON types.
func JSON(b []byte) any { return string(b) }

// TimeDest scans a timestamp column of any dialect into *t, in UTC.
func TimeDest(t *time.Time) *TimeScanner { return &TimeScanner{t: t} }

// TimeScanner is a sql.Scanner for timestamp columns: integers are unix
// microseconds (SQLite), time.Time values are taken as they are.
type TimeScanner struct{ t *time.Time }

// Scan implements sql.Scanner.
func (s *TimeScanner) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		*s.t = time.UnixMicro(v).UTC()
	case time.Time:
		*s.t = v.UTC()
	case []byte:
		return s.parse(string(v))
	case string:
		return s.parse(v)
	case nil:
		*s.t = time.Time{}
	default:
		return fmt.Errorf("dialectsql: cannot scan %T into a time", src)
	}
	return nil
}

func (s *TimeScanner) parse(v string) error {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		*s.t = time.UnixMicro(n).UTC()
		return nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, v); err == nil {
			*s.t = t.UTC()
			return nil
		}
	}
	return fmt.Errorf("dialectsql: cannot parse time %q", v)
}

// InTx runs fn in a transaction of db and commits it, or rolls it back when fn
// fails. what prefixes the begin and commit errors ("links", "records").
func InTx(ctx context.Context, db *sql.DB, what string, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: begin: %w", what, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: commit: %w", what, err)
	}
	return nil
}
