// Package textcheck tells whether a string from a request can be stored and
// compared as text by every supported database: PostgreSQL refuses invalid
// UTF-8 and NUL (an error, where SQLite and MariaDB may store or cut it), so
// a request naming such a key, id or filter is a client's mistake, answered
// 4xx, not a 500 from deep in the store. Other control characters are text
// every database holds; whether a field may contain them is the caller's
// rule.
package textcheck

import (
	"strings"
	"unicode/utf8"
)

// Problem returns what is wrong with v as text a database stores ("is not
// valid UTF-8", "holds NUL"), or "" when nothing is.
func Problem(v string) string {
	switch {
	case !utf8.ValidString(v):
		return "is not valid UTF-8"
	case strings.ContainsRune(v, 0):
		return "holds NUL"
	}
	return ""
}
