package store

import "strings"

// RedactURL returns a database URL fit for display: the password of its user
// information and the value of a password query parameter (pgx takes
// postgres://app@db/crm?password=…), if any, are replaced by "xxxxx". It
// works on text that does not parse as a URL too, so that an error about a
// malformed URL can still quote it. Every place that shows a database URL
// (help output, errors, logs) goes through it.
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
	auth, tail := rest[:end], redactQuery(rest[end:])
	at := strings.LastIndex(auth, "@")
	if at < 0 {
		return scheme + "://" + auth + tail
	}
	user, _, hasPassword := strings.Cut(auth[:at], ":")
	if !hasPassword {
		return scheme + "://" + auth + tail
	}
	return scheme + "://" + user + ":xxxxx" + auth[at:] + tail
}

// redactQuery replaces the value of every password parameter of the query
// in tail (the URL after its authority: path, query, fragment).
func redactQuery(tail string) string {
	q := strings.IndexByte(tail, '?')
	if q < 0 {
		return tail
	}
	query, frag := tail[q+1:], ""
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query, frag = query[:h], query[h:]
	}
	params := strings.Split(query, "&")
	for i, p := range params {
		if k, _, ok := strings.Cut(p, "="); ok && strings.EqualFold(k, "password") {
			params[i] = k + "=xxxxx"
		}
	}
	return tail[:q+1] + strings.Join(params, "&") + frag
}
