package store

import (
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"postgres://app:s3cret@db:5432/crm?sslmode=disable", "postgres://app:xxxxx@db:5432/crm?sslmode=disable"},
		{"mysql://root:p@ss@host:3306/db", "mysql://root:xxxxx@host:3306/db"},
		{"postgres://app@db/crm", "postgres://app@db/crm"},
		{"sqlite:/tmp/x.db", "sqlite:/tmp/x.db"},
		{"postgres://u:pa%zzss@h/db", "postgres://u:xxxxx@h/db"},
		{"mysql://u:secret@h", "mysql://u:xxxxx@h"},
		// pgx takes the password from the query too.
		{"postgres://app@db:5432/crm?password=hunter2", "postgres://app@db:5432/crm?password=xxxxx"},
		{"postgres://app@db/crm?sslmode=disable&PASSWORD=hunter2&x=1#f", "postgres://app@db/crm?sslmode=disable&PASSWORD=xxxxx&x=1#f"},
		{"postgres://app:s3cret@db/crm?password=hunter2", "postgres://app:xxxxx@db/crm?password=xxxxx"},
		{"postgres://db?password", "postgres://db?password"},
	} {
		if got := RedactURL(c.in); got != c.want {
			t.Errorf("RedactURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzRedactURL: RedactURL never panics, is idempotent, and leaves no value
// of a password query parameter in its output.
func FuzzRedactURL(f *testing.F) {
	f.Add("postgres://app:s3cret@db:5432/crm?sslmode=disable")
	f.Add("postgres://app@db/crm?password=hunter2#x")
	f.Add("mysql://root:p@ss@host:3306/db")
	f.Add("not a url")
	f.Fuzz(func(t *testing.T, raw string) {
		once := RedactURL(raw)
		if twice := RedactURL(once); twice != once {
			t.Fatalf("RedactURL(%q) = %q, but RedactURL of that = %q", raw, once, twice)
		}
		_, rest, ok := strings.Cut(once, "://")
		if !ok {
			return
		}
		_, query, ok := strings.Cut(rest, "?")
		if !ok {
			return
		}
		query, _, _ = strings.Cut(query, "#")
		for _, p := range strings.Split(query, "&") {
			if k, v, ok := strings.Cut(p, "="); ok && strings.EqualFold(k, "password") && v != "xxxxx" {
				t.Fatalf("RedactURL(%q) = %q shows a password parameter", raw, once)
			}
		}
	})
}
