package inbound

import (
	"bytes"

	"github.com/hubsync/hubsync/internal/textcheck"
)

// MaxEventDepth is the deepest nesting of arrays and objects an event may
// have: MariaDB's JSON column refuses a document whose arrays and objects
// nest 32 deep, and a HubSpot event is 1 or 2 deep. A deeper event is
// refused on its own (EventRejectMalformed); it never fails its delivery.
const MaxEventDepth = textcheck.MaxJSONDepth

// storable returns raw as every store's JSON column accepts it, and false
// when no store can hold it (nested deeper than MaxEventDepth).
// encoding/json accepts an escaped UTF-16 surrogate without its pair
// ("\ud83d"), and so do SQLite and PostgreSQL's json, but MariaDB's JSON
// check refuses the document; such an escape becomes "\ufffd", the
// character encoding/json decodes it to, so the raw payload says what the
// parsed event holds. raw itself is never changed: a repaired event is a
// copy. Nearly every event has neither, and costs two byte counts.
func storable(raw []byte) ([]byte, bool) {
	deep := bytes.Count(raw, []byte{'['})+bytes.Count(raw, []byte{'{'}) > MaxEventDepth
	if !deep && !bytes.Contains(raw, []byte(`\u`)) {
		return raw, true
	}
	var out []byte // the repaired copy, once one is needed
	depth := textcheck.WalkJSON(raw, func(i int) bool {
		if out == nil {
			out = bytes.Clone(raw)
		}
		copy(out[i:i+6], `\ufffd`)
		return true
	})
	if depth > MaxEventDepth {
		return nil, false
	}
	if out == nil {
		return raw, true
	}
	return out, true
}
