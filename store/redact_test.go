package store

import "testing"

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"postgres://app:s3cret@db:5432/crm?sslmode=disable", "postgres://app:xxxxx@db:5432/crm?sslmode=disable"},
		{"mysql://root:p@ss@host:3306/db", "mysql://root:xxxxx@host:3306/db"},
		{"postgres://app@db/crm", "postgres://app@db/crm"},
		{"sqlite:/tmp/x.db", "sqlite:/tmp/x.db"},
		{"postgres://u:pa%zzss@h/db", "postgres://u:xxxxx@h/db"},
		{"mysql://u:secret@h", "mysql://u:xxxxx@h"},
	} {
		if got := RedactURL(c.in); got != c.want {
			t.Errorf("RedactURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
