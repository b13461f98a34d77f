package store

import "strings"

// RedactURL returns a database URL fit for display: the password of its user
// information, if any, is replaced by "xxxxx". It works on text that does not
// parse as a URL too, so that an error about a malformed URL can still quote
// it. Every place that shows a database URL (help output, errors, logs) goes
// through it.
func RedactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	// The authority ends at the first '/', '?' or '#'; the user information
	// ends at its last '@' (a password may hold an unescaped '@').
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	auth := rest[:end]
	at := strings.LastIndex(auth, "@")
	if at < 0 {
		return raw
	}
	user, _, hasPassword := strings.Cut(auth[:at], ":")
	if !hasPassword {
		return raw
	}
	return scheme + "://" + user + ":xxxxx" + auth[at:] + rest[end:]
}
