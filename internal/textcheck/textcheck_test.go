package textcheck

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestProblem(t *testing.T) {
	for v, bad := range map[string]bool{
		"": false, "abc-123": false, "Ünïcödé ✓": false, "a b": false, "a\tb": false, "a\nb": false,
		"k\xff\xfe": true, "a\x00b": true, "\xed\xa0\x80": true,
	} {
		if got := Problem(v); (got != "") != bad {
			t.Errorf("Problem(%q) = %q; want a problem: %v", v, got, bad)
		}
	}
}

func FuzzProblem(f *testing.F) {
	for _, s := range []string{"", "abc", "k\xff", "a\x00b", "é", "\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		want := !utf8.ValidString(v) || strings.ContainsRune(v, 0)
		if got := Problem(v) != ""; got != want {
			t.Fatalf("Problem(%q) reports a problem: %v; want %v", v, got, want)
		}
	})
}
