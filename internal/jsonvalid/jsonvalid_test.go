package jsonvalid_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/internal/jsonvalid"
)

var cases = []string{
	``, ` `, `null`, `nul`, `nulll`, `true`, `false`, `fals`, `"a"`, `"a`, `a"`, `""`,
	`0`, `-0`, `-`, `01`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-5`, `1e`, `1e+`, `-1.5e10`, `1.5.5`,
	`[]`, `[ ]`, `[`, `]`, `[1,]`, `[,1]`, `[1 2]`, `[1,2]`, ` [ 1 , 2 ] `, `[[],[[]]]`,
	`{}`, `{ }`, `{"a":1}`, `{"a":}`, `{"a" 1}`, `{"a":1,}`, `{,"a":1}`, `{"a":1 "b":2}`, `{a:1}`,
	`{"a":[1,{"b":null}]}`, `{"a":1}}`, `[1]]`, `{"a":1]`, `[1}`, `1 2`, `"\u00e9"`, `"\u00g9"`,
	`"\u00e"`, `"\x"`, `"\"\\\/\b\f\n\r\t"`, "\"a\tb\"", "\"a\x00b\"", "\"\xff\"", "\xff",
	`[1,2,3]` + "\n", "\t{}\r\n", `[true,false,null]`, `[truefalse]`, `{"":""}`, `{"a":"b","c":{"d":[]}}`,
	`[-]`, `[-a]`, `[1e]`, `[0.]`, `{"a"}`, `{"a":1,"b"}`, `"\`, `"\u`, `"\u12`,
}

// TestValidAgreesWithEncodingJSON holds Valid to encoding/json's answer on
// hand-picked texts (FuzzValid explores beyond them).
func TestValidAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range cases {
		if got, want := jsonvalid.Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%q) = %v; encoding/json says %v", c, got, want)
		}
	}
}

// TestValidDepth: nesting up to MaxDepth is valid, one more is not, as in
// encoding/json, for arrays, objects, and empty innermost containers.
func TestValidDepth(t *testing.T) {
	for _, n := range []int{jsonvalid.MaxDepth, jsonvalid.MaxDepth + 1} {
		for name, text := range map[string]string{
			"arrays":       strings.Repeat("[", n) + strings.Repeat("]", n),
			"arrays of 1":  strings.Repeat("[", n) + "1" + strings.Repeat("]", n),
			"objects":      strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1),
			"objects of 1": strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n),
		} {
			b := []byte(text)
			if got, want := jsonvalid.Valid(b), json.Valid(b); got != want || want != (n <= jsonvalid.MaxDepth) {
				t.Errorf("%s nested %d deep: Valid = %v, encoding/json %v; want %v", name, n, got, want, n <= jsonvalid.MaxDepth)
			}
		}
	}
}

// FuzzValid: Valid gives encoding/json's answer for any input.
func FuzzValid(f *testing.F) {
	for _, c := range cases {
		f.Add([]byte(c))
	}
	f.Add([]byte(`[{"eventId":1,"subscriptionId":2,"portalId":3,"appId":4,"occurredAt":1700000000000,"subscriptionType":"contact.propertyChange","attemptNumber":0,"objectId":5,"propertyName":"email","propertyValue":"a@b.c","changeSource":"CRM_UI"}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := jsonvalid.Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v; encoding/json says %v", b, got, want)
		}
	})
}

// delivery is a webhook delivery of 100 events, as TestReceiverLoad sends.
func delivery() []byte {
	var sb strings.Builder
	sb.WriteByte('[')
	for i := range 100 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"eventId":1234567,"subscriptionId":987,"portalId":62515,"appId":1000,"occurredAt":1700000000000,"subscriptionType":"contact.propertyChange","attemptNumber":0,"objectId":512,"propertyName":"firstname","propertyValue":"Ada Lovelace, Countess of Lovelace","changeSource":"CRM_UI","sourceId":"userId:123"}`)
	}
	sb.WriteByte(']')
	return []byte(sb.String())
}

// BenchmarkValid compares Valid with encoding/json's on a 100-event
// delivery: go test ./internal/jsonvalid -run '^$' -bench Valid.
func BenchmarkValid(b *testing.B) {
	body := delivery()
	for _, bc := range []struct {
		name  string
		valid func([]byte) bool
	}{{"jsonvalid", jsonvalid.Valid}, {"encoding-json", json.Valid}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if !bc.valid(body) {
					b.Fatal("not valid")
				}
			}
		})
	}
}
