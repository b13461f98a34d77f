package inbound

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// TestOddEventDoesNotSinkItsDelivery: an event encoding/json accepts but
// MySQL's and MariaDB's JSON column refuses (a lone UTF-16 surrogate escape,
// or arrays and objects nested 32 deep) must not fail its delivery with a 500 on any
// store: HubSpot retries that for a day and then drops every valid event of
// it. A lone surrogate is stored as U+FFFD, which the event's parsed value
// holds too; a too-deep event is refused on its own.
func TestOddEventDoesNotSinkItsDelivery(t *testing.T) {
	for _, tc := range []struct {
		name, body         string
		inserted, rejected int
	}{
		{"surrogate", strings.Replace(sampleDelivery, `"propertyValue":"Ada"`, `"propertyValue":"Ada \ud83d \ud83d\ude00"`, 1), 8, 0},
		{"deep", strings.Replace(sampleDelivery, `"propertyValue":"Ada"`, `"propertyValue":"Ada","x":`+strings.Repeat("[", 40)+strings.Repeat("]", 40), 1), 7, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, d store.Dialect) {
				b := setupDialect(t, d, store.RetryPolicy{NoJitter: true, MaxAttempts: 3})
				rec := b.deliver(t, []byte(tc.body))
				if rec.Code != http.StatusOK {
					t.Fatalf("delivery answered %d: %s; want 200", rec.Code, rec.Body)
				}
				var got receiveResponse
				if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
					t.Fatal(err)
				}
				if got.Inserted != tc.inserted || got.Rejected != tc.rejected || b.count(t) != tc.inserted {
					t.Fatalf("answer %+v, %d rows; want %d inserted, %d rejected", got, b.count(t), tc.inserted, tc.rejected)
				}
				if tc.name != "surrogate" {
					return
				}
				for _, ev := range b.all(t) {
					if !bytes.Contains(ev.RawPayload, []byte(`"propertyValue":"Ada`)) {
						continue
					}
					if !bytes.Contains(ev.RawPayload, []byte(`Ada \ufffd \ud83d\ude00`)) {
						t.Fatalf("stored raw payload %s; want the lone surrogate as \\ufffd and the pair kept", ev.RawPayload)
					}
					return
				}
				t.Fatal("the event with the surrogate was not stored")
			})
		})
	}
}

func TestStorable(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{`{"a":"b"}`, `{"a":"b"}`, true},
		{`{"a":"\ud83d\ude00"}`, `{"a":"\ud83d\ude00"}`, true},
		{`{"a":"\ud83d"}`, `{"a":"\ufffd"}`, true},
		{`{"a":"\uDE00\uD83D"}`, `{"a":"\ufffd\ufffd"}`, true},
		{`{"a":"\\ud83d"}`, `{"a":"\\ud83d"}`, true}, // an escaped backslash, not an escape
		{`{"a":"\ud83d\u0041"}`, `{"a":"\ufffd\u0041"}`, true},
		{`{"a":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}`, `{"a":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}`, true}, // brackets in a string
		{`{"a":` + strings.Repeat("[", 30) + `1` + strings.Repeat("]", 30) + `}`, `{"a":` + strings.Repeat("[", 30) + `1` + strings.Repeat("]", 30) + `}`, true},
		{`{"a":` + strings.Repeat("[", 31) + strings.Repeat("]", 31) + `}`, "", false},
	} {
		got, ok := storable([]byte(tc.in))
		if ok != tc.ok || (ok && string(got) != tc.want) {
			t.Errorf("storable(%s) = %s, %v; want %s, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzStorable: for valid JSON, storable's output (when storable) is valid
// JSON that decodes to what the input decodes to, holds no lone surrogate
// escape, and is nested at most MaxEventDepth deep; its input is never
// changed.
func FuzzStorable(f *testing.F) {
	f.Add(`{"a":"\ud83d"}`)
	f.Add(`{"a":"\ud83d\ude00","b":[[1]]}`)
	f.Add(`{"a":"\\ud83d"}`)
	f.Add(`[` + strings.Repeat("[", 33) + strings.Repeat("]", 33) + `]`)
	f.Fuzz(func(t *testing.T, in string) {
		if !json.Valid([]byte(in)) {
			return
		}
		raw := []byte(in)
		out, ok := storable(raw)
		if string(raw) != in {
			t.Fatalf("storable changed its input %q to %q", in, raw)
		}
		var want any
		json.Unmarshal(raw, &want)
		if !ok {
			if depth(want) <= MaxEventDepth {
				t.Fatalf("storable(%q) refused a document %d deep", in, depth(want))
			}
			return
		}
		if depth(want) > MaxEventDepth {
			t.Fatalf("storable(%q) kept a document %d deep", in, depth(want))
		}
		var got any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("storable(%q) = %q: %v", in, out, err)
		}
		a, _ := json.Marshal(want)
		b, _ := json.Marshal(got)
		if !bytes.Equal(a, b) {
			t.Fatalf("storable(%q) = %q decodes to %s; want %s", in, out, b, a)
		}
		if again, _ := storable(out); !bytes.Equal(again, out) {
			t.Fatalf("storable(%q) = %q still has something to repair: %q", in, out, again)
		}
	})
}

func depth(v any) int {
	switch v := v.(type) {
	case []any:
		d := 0
		for _, x := range v {
			d = max(d, depth(x))
		}
		return d + 1
	case map[string]any:
		d := 0
		for _, x := range v {
			d = max(d, depth(x))
		}
		return d + 1
	}
	return 0
}

// TestStorableDepthIsMariaDBs: the deepest event storable keeps is one
// MariaDB's JSON column accepts, and one level more is one it refuses, so
// MaxEventDepth follows the database, not a guess.
func TestStorableDepthIsMariaDBs(t *testing.T) {
	db := dbtest.New(t, store.MySQL)
	for _, n := range []int{MaxEventDepth, MaxEventDepth + 1} {
		doc := `{"a":` + strings.Repeat("[", n-1) + `1` + strings.Repeat("]", n-1) + `}`
		_, kept := storable([]byte(doc))
		var valid bool
		if err := db.DB.QueryRow("SELECT JSON_VALID(?)", doc).Scan(&valid); err != nil {
			t.Fatal(err)
		}
		if kept != valid {
			t.Errorf("nesting %d: storable keeps it %v, MariaDB's JSON_VALID says %v", n, kept, valid)
		}
	}
}
