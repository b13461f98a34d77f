package textcheck

import (
	"encoding/json"
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

func TestJSONProblem(t *testing.T) {
	nested := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for raw, bad := range map[string]bool{
		`{}`: false, `{"a":"\u00e9 \ud83d\ude00"}`: false, `"\\ud800"`: false, `"[[[["`: false,
		nested(MaxJSONDepth): false, nested(MaxJSONDepth + 1): true,
		`"\ud800"`: true, `"\udc00"`: true, `"\ud83d\u0041"`: true, `{"\ud83d":1}`: true, `"x\ud83d"`: true,
	} {
		if got := JSONProblem([]byte(raw)); (got != "") != bad {
			t.Errorf("JSONProblem(%s) = %q; want a problem: %v", raw, got, bad)
		}
	}
}

// FuzzJSONProblem: a valid JSON document JSONProblem passes decodes without
// a U+FFFD it did not hold, and nests no deeper than MaxJSONDepth.
func FuzzJSONProblem(f *testing.F) {
	for _, s := range []string{`{}`, `"\ud800"`, `["\ud83d\ude00"]`, `{"a":[{"b":"\\u"}]}`, `"\uDBFF\uDFFF"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if JSONProblem(raw) != "" || !json.Valid(raw) {
			return
		}
		var v any
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber() // a number too large for float64 is still valid JSON
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("valid JSON %q did not decode: %v", raw, err)
		}
		held := strings.Contains(string(raw), "\uFFFD") || strings.Contains(strings.ToLower(string(raw)), "\ufffd") || strings.ContainsRune(string(raw), utf8.RuneError)
		var walk func(v any, depth int)
		walk = func(v any, depth int) {
			switch v := v.(type) {
			case string:
				if !held && strings.ContainsRune(v, utf8.RuneError) {
					t.Fatalf("JSONProblem passed %q, which decodes to U+FFFD", raw)
				}
			case []any:
				if depth+1 > MaxJSONDepth {
					t.Fatalf("JSONProblem passed %q, nested %d deep", raw, depth+1)
				}
				for _, x := range v {
					walk(x, depth+1)
				}
			case map[string]any:
				if depth+1 > MaxJSONDepth {
					t.Fatalf("JSONProblem passed %q, nested %d deep", raw, depth+1)
				}
				for k, x := range v {
					walk(k, depth+1)
					walk(x, depth+1)
				}
			}
		}
		walk(v, 0)
	})
}
