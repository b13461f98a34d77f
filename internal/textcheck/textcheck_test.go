package textcheck

import "testing"

func TestProblem(t *testing.T) {
	for v, bad := range map[string]bool{
		"": false, "abc-123": false, "Ünïcödé ✓": false, "a b": false,
		"k\xff\xfe": true, "a\x00b": true, "a\nb": true, "a\rb": true, "\x7f": true, "a\u0085b": true,
	} {
		if got := Problem(v); (got != "") != bad {
			t.Errorf("Problem(%q) = %q; want a problem: %v", v, got, bad)
		}
	}
}

func FuzzProblem(f *testing.F) {
	for _, s := range []string{"", "abc", "k\xff", "a\x00b", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if Problem(v) != "" {
			return
		}
		for _, c := range v {
			if c == 0 || c == '\n' || c == '\r' || c == '\uFFFD' && !validReplacement(v) {
				t.Fatalf("Problem(%q) found nothing, but it holds %q", v, c)
			}
		}
	})
}

// validReplacement reports whether every U+FFFD in v is written out, not an
// invalid byte decoded as one.
func validReplacement(v string) bool {
	for i, c := range v {
		if c == '\uFFFD' && (len(v) < i+3 || v[i:i+3] != "\uFFFD") {
			return false
		}
	}
	return true
}
