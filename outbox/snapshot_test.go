package outbox_test

import (
	"encoding/json"
	"testing"

	"github.com/hubsync/hubsync/outbox"
)

func TestParseSnapshotKeepsLargeIntegers(t *testing.T) {
	s, err := outbox.ParseSnapshot(json.RawMessage(`{"id":"r1","version":3,"fields":{"n":12345678901234567891,"x":2.5}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.Fields["n"].(json.Number); !ok || got.String() != "12345678901234567891" {
		t.Fatalf("large integer decoded as %#v, want json.Number 12345678901234567891", s.Fields["n"])
	}
	if s.ID != "r1" || s.Version != 3 {
		t.Fatalf("snapshot = %+v", s)
	}
}

func TestParseSnapshotEdges(t *testing.T) {
	for _, in := range []string{"", "null"} {
		if s, err := outbox.ParseSnapshot(json.RawMessage(in)); s != nil || err != nil {
			t.Errorf("ParseSnapshot(%q) = %v, %v; want nil, nil", in, s, err)
		}
	}
	for _, in := range []string{"{", `{"fields":[]}`, `{} {}`, `"x"`} {
		if _, err := outbox.ParseSnapshot(json.RawMessage(in)); err == nil {
			t.Errorf("ParseSnapshot(%q) accepted malformed input", in)
		}
	}
	s, err := outbox.ParseSnapshot(json.RawMessage(`{"id":"a","metadata":{"sync_source":"hubspot"}}`))
	if err != nil || s.Fields == nil || !s.SyncSourced("hubspot") || s.SyncSourced("other") {
		t.Fatalf("ParseSnapshot with metadata = %+v, %v", s, err)
	}
}

func FuzzParseSnapshot(f *testing.F) {
	f.Add([]byte(`{"id":"r","version":1,"fields":{"a":1,"b":"x","c":null,"d":true}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := outbox.ParseSnapshot(b)
		if err != nil || s == nil {
			return
		}
		out, err := s.Marshal()
		if err != nil {
			t.Fatalf("a parsed snapshot must marshal again: %v", err)
		}
		if _, err := outbox.ParseSnapshot(out); err != nil {
			t.Fatalf("re-parse of %s: %v", out, err)
		}
	})
}
