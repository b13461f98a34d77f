// Package logtext makes text that arrives from outside fit for a log line.
package logtext

import "unicode/utf8"

// URIMax bounds a request URI in a log line.
const URIMax = 256

// URI returns s cut to URIMax bytes (at a character boundary) followed by
// "…" when it was longer, so a 900 KB query string costs a log line of a
// few hundred bytes.
func URI(s string) string {
	if len(s) <= URIMax {
		return s
	}
	cut := URIMax
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
