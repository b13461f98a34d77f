package dialectsql

import (
	"strconv"
	"strings"

	"github.com/hubsync/hubsync/store"
)

// Rebind turns ? placeholders into $1, $2, … for PostgreSQL and leaves them
// for SQLite and MySQL. A ? inside a single-quoted literal or a -- comment is
// left alone.
func Rebind(d store.Dialect, query string) string {
	out, _ := rewrite(d, query, false)
	return out
}

// Bind turns @name parameters into the dialect's placeholders and returns, for
// each bind position, the parameter's name. On SQLite and MySQL every
// occurrence is its own ?; on PostgreSQL a parameter used twice keeps its $n.
// An @ inside a single-quoted literal or a -- comment is left alone.
func Bind(d store.Dialect, query string) (string, []string) {
	return rewrite(d, query, true)
}

// rewrite is the one placeholder scanner: it walks query once, skipping
// literals and comments, and rewrites ? (named false) or @name (named true).
func rewrite(d store.Dialect, query string, named bool) (string, []string) {
	mark := byte('?')
	if named {
		mark = '@'
	}
	dollar := d == store.Postgres
	if strings.IndexByte(query, mark) < 0 || (!named && !dollar) {
		return query, nil
	}
	var (
		b     strings.Builder
		names []string
		pos   = map[string]int{}
	)
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
		case c == mark && !named:
			names = append(names, "")
			b.WriteString("$" + strconv.Itoa(len(names)))
			continue
		case c == mark && named && i+1 < len(query) && identStart(query[i+1]):
			j := i + 1
			for j < len(query) && identPart(query[j]) {
				j++
			}
			name := query[i+1 : j]
			i = j - 1
			if !dollar {
				names = append(names, name)
				b.WriteByte('?')
				continue
			}
			n, ok := pos[name]
			if !ok {
				names = append(names, name)
				n = len(names)
				pos[name] = n
			}
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	if !named {
		names = nil
	}
	return b.String(), names
}

func identStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func identPart(c byte) bool { return identStart(c) || '0' <= c && c <= '9' }
