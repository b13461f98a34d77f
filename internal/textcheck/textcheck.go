// Package textcheck tells whether a string from a request can be stored and
// compared as text by every supported database: PostgreSQL refuses invalid
// UTF-8 and NUL (an error, where SQLite and MariaDB may store or cut it), so
// a request naming such a key, id or filter is a client's mistake, answered
// 4xx, not a 500 from deep in the store. Other control characters are text
// every database holds; whether a field may contain them is the caller's
// rule.
package textcheck

import (
	"fmt"
	"strconv"
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

// MaxJSONDepth is the deepest nesting of arrays and objects a JSON document
// may have to be stored in every database: MariaDB's JSON check refuses 32.
const MaxJSONDepth = 31

// JSONProblem returns what is wrong with the JSON text raw as a document every
// database stores as sent, or "": a UTF-16 surrogate escape without its pair
// ("\ud800", which encoding/json silently decodes to U+FFFD, so the document
// stored would not be the one sent), or arrays and objects nested deeper than
// MaxJSONDepth. It does not check that raw is valid JSON.
func JSONProblem(raw []byte) string {
	problem := ""
	if depth := WalkJSON(raw, func(i int) bool {
		problem = fmt.Sprintf("holds a UTF-16 surrogate escape without its pair (%s), which would be stored as U+FFFD; send the character itself, or the whole pair", raw[i:i+6])
		return false
	}); problem == "" && depth > MaxJSONDepth {
		problem = fmt.Sprintf("nests arrays and objects more than %d deep", MaxJSONDepth)
	}
	return problem
}

// WalkJSON scans the JSON text raw (without checking that it is valid JSON)
// and returns the deepest nesting of its arrays and objects. It calls lone
// with the offset of each UTF-16 surrogate escape without its pair
// (raw[i:i+6], "\ud83d"); when lone returns false, the scan stops there.
func WalkJSON(raw []byte, lone func(i int) bool) (maxDepth int) {
	depth := 0
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !inString {
			switch c {
			case '"':
				inString = true
			case '[', '{':
				depth++
				maxDepth = max(maxDepth, depth)
			case ']', '}':
				depth--
			}
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			if n, isLone := UnicodeEscape(raw, i); n > 0 {
				if isLone && !lone(i) {
					return maxDepth
				}
				i += n - 1
				continue
			}
			i++ // the escaped character
		}
	}
	return maxDepth
}

// UnicodeEscape reads the \uXXXX escape at raw[i:] inside a JSON string: n
// is its length (6, or 12 for a surrogate pair), 0 when raw[i:] is no such
// escape; lone is true for a surrogate without its pair (6 bytes).
func UnicodeEscape(raw []byte, i int) (n int, lone bool) {
	if i+1 >= len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
		return 0, false
	}
	r, ok := hex4(raw, i+2)
	switch {
	case !ok:
		return 0, false
	case r < 0xD800 || r > 0xDFFF:
		return 6, false
	case r <= 0xDBFF && i+11 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' && isLow(raw, i+8):
		return 12, false
	}
	return 6, true
}

// hex4 reads the 4 hexadecimal digits at raw[i:].
func hex4(raw []byte, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw[i:i+4]), 16, 16)
	return rune(n), err == nil
}

// isLow reports whether the 4 hexadecimal digits at raw[i:] are a low
// surrogate.
func isLow(raw []byte, i int) bool {
	r, ok := hex4(raw, i)
	return ok && r >= 0xDC00 && r <= 0xDFFF
}
