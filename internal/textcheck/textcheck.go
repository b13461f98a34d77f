// Package textcheck tells whether a string from a request can be stored and
// compared as text by every supported database: PostgreSQL refuses invalid
// UTF-8 and NUL (an error, where SQLite and MariaDB may store or truncate
// it), so a request naming such a key, id or filter is a client's mistake,
// answered 4xx, not a 500 from deep in the store.
package textcheck

import (
	"unicode"
	"unicode/utf8"
)

// Problem returns what is wrong with v as a request's text ("is not valid
// UTF-8", "holds a control character"), or "" when nothing is.
func Problem(v string) string {
	if !utf8.ValidString(v) {
		return "is not valid UTF-8"
	}
	for _, c := range v {
		if unicode.IsControl(c) {
			return "holds a control character"
		}
	}
	return ""
}
