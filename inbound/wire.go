package inbound

import (
	"bytes"
	"encoding/json"

	"github.com/hubsync/hubsync/internal/jsonvalid"
)

// The receiver's parse checks a delivery once (jsonvalid.Valid, which
// answers as encoding/json's json.Valid does) and then walks the text it has
// validated: it splits the array into events
// (splitArray) and each event into its members (decodeWire), where
// json.Unmarshal would scan every event twice more (a validation pass, then a
// decoding pass that matches each key case-insensitively against the struct's
// fields). Under load that was a fifth of the receiver's CPU. The walk gives
// the same result as encoding/json, which a fuzz test compares it with
// (FuzzDecodeWire); wherever the two could differ (an escaped key, a key that
// only matches a field's name ignoring case, a mergedObjectIds that is not an
// array) it hands the event to encoding/json instead.

// valueEnd returns the index just past the JSON value that starts at b[i], in
// text that is valid JSON, or -1 when it does not find one.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = stringEnd(b, i)
				if i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default: // a number, true, false or null
		start := i
		for i < len(b) {
			switch b[i] {
			case ',', ']', '}', ' ', '\t', '\r', '\n':
				if i == start {
					return -1
				}
				return i
			}
			i++
		}
		if i == start {
			return -1
		}
		return i
	}
}

// stringEnd returns the index just past the JSON string that starts at b[i]
// (a '"'), or -1.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++ // the escaped byte; a \u's hex digits hold no quote
		case '"':
			return i + 1
		}
	}
	return -1
}

// splitArray returns the elements of doc, a JSON array that json.Valid has
// accepted, as subslices of doc; ok is false when doc is not such an array.
func splitArray(doc []byte) (elems []json.RawMessage, ok bool) {
	i := jsonvalid.SkipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '[' {
		return nil, false
	}
	i = jsonvalid.SkipSpace(doc, i+1)
	if i < len(doc) && doc[i] == ']' {
		return []json.RawMessage{}, jsonvalid.SkipSpace(doc, i+1) == len(doc)
	}
	for {
		end := valueEnd(doc, i)
		if end < 0 {
			return nil, false
		}
		elems = append(elems, doc[i:end:end])
		var more bool
		if i, more, ok = afterValue(doc, end, ']'); !more {
			if !ok {
				return nil, false
			}
			return elems, true
		}
	}
}

// afterValue reads what follows a value of a container that ends at b[end]:
// a comma, after which more is true and i is the next value's start, or the
// container's closer, after which ok says whether only space follows it (b
// holds one container). ok is false for anything else.
func afterValue(b []byte, end int, closer byte) (i int, more, ok bool) {
	i = jsonvalid.SkipSpace(b, end)
	switch {
	case i >= len(b):
		return i, false, false
	case b[i] == ',':
		return jsonvalid.SkipSpace(b, i+1), true, true
	case b[i] == closer:
		return i, false, jsonvalid.SkipSpace(b, i+1) == len(b)
	}
	return i, false, false
}

// wireFields are wireEvent's members by their JSON names.
var wireFields = map[string]func(w *wireEvent) *json.RawMessage{
	"eventId":                 func(w *wireEvent) *json.RawMessage { return &w.EventID },
	"subscriptionId":          func(w *wireEvent) *json.RawMessage { return &w.SubscriptionID },
	"portalId":                func(w *wireEvent) *json.RawMessage { return &w.PortalID },
	"appId":                   func(w *wireEvent) *json.RawMessage { return &w.AppID },
	"occurredAt":              func(w *wireEvent) *json.RawMessage { return &w.OccurredAt },
	"subscriptionType":        func(w *wireEvent) *json.RawMessage { return &w.SubscriptionType },
	"objectId":                func(w *wireEvent) *json.RawMessage { return &w.ObjectID },
	"propertyName":            func(w *wireEvent) *json.RawMessage { return &w.PropertyName },
	"propertyValue":           func(w *wireEvent) *json.RawMessage { return &w.PropertyValue },
	"changeSource":            func(w *wireEvent) *json.RawMessage { return &w.ChangeSource },
	"sourceId":                func(w *wireEvent) *json.RawMessage { return &w.SourceID },
	"changeFlag":              func(w *wireEvent) *json.RawMessage { return &w.ChangeFlag },
	"primaryObjectId":         func(w *wireEvent) *json.RawMessage { return &w.PrimaryObjectID },
	"newObjectId":             func(w *wireEvent) *json.RawMessage { return &w.NewObjectID },
	"numberOfPropertiesMoved": func(w *wireEvent) *json.RawMessage { return &w.NumberOfPropertiesMoved },
	"associationType":         func(w *wireEvent) *json.RawMessage { return &w.AssociationType },
	"fromObjectId":            func(w *wireEvent) *json.RawMessage { return &w.FromObjectID },
	"toObjectId":              func(w *wireEvent) *json.RawMessage { return &w.ToObjectID },
	"associationRemoved":      func(w *wireEvent) *json.RawMessage { return &w.AssociationRemoved },
	"isPrimaryAssociation":    func(w *wireEvent) *json.RawMessage { return &w.IsPrimaryAssociation },
}

const mergedObjectIDsName = "mergedObjectIds"

// decodeWire decodes one event, a JSON object from a delivery that json.Valid
// has accepted, as json.Unmarshal into a wireEvent would.
func decodeWire(raw json.RawMessage) (wireEvent, error) {
	if w, ok := walkWire(raw); ok {
		return w, nil
	}
	var w wireEvent
	err := json.Unmarshal(raw, &w)
	return w, err
}

// walkWire is decodeWire's walk over raw's members; ok is false where only
// encoding/json can say what raw decodes to.
func walkWire(raw []byte) (w wireEvent, ok bool) {
	i := jsonvalid.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return wireEvent{}, false
	}
	i = jsonvalid.SkipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return w, jsonvalid.SkipSpace(raw, i+1) == len(raw)
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return wireEvent{}, false
		}
		kend := stringEnd(raw, i)
		if kend < 0 {
			return wireEvent{}, false
		}
		key := raw[i+1 : kend-1]
		i = jsonvalid.SkipSpace(raw, kend)
		if i >= len(raw) || raw[i] != ':' {
			return wireEvent{}, false
		}
		i = jsonvalid.SkipSpace(raw, i+1)
		end := valueEnd(raw, i)
		if end < 0 {
			return wireEvent{}, false
		}
		if !setWire(&w, key, raw[i:end:end]) { // capped: an append must copy
			return wireEvent{}, false
		}
		var more bool
		if i, more, ok = afterValue(raw, end, '}'); !more {
			if !ok {
				return wireEvent{}, false
			}
			return w, true
		}
	}
}

// setWire stores the member key: val in w, as encoding/json would (a later
// duplicate replaces an earlier one; an unknown key is ignored); false when
// only encoding/json can say.
func setWire(w *wireEvent, key, val []byte) bool {
	if f, ok := wireFields[string(key)]; ok {
		*f(w) = json.RawMessage(val)
		return true
	}
	if string(key) == mergedObjectIDsName {
		switch val[0] {
		case 'n': // null
			w.MergedObjectIDs = nil
			return true
		case '[':
			ids, ok := splitArray(val)
			if !ok {
				return false
			}
			// Never nil, as from json.Unmarshal, even for [].
			w.MergedObjectIDs = append(make([]json.RawMessage, 0, len(ids)), ids...)
			return true
		}
		return false // encoding/json reports the wrong type
	}
	// encoding/json also matches a key that differs from a field's name only
	// in case (with Unicode folding), and decodes escapes in keys first.
	if bytes.IndexByte(key, '\\') >= 0 {
		return false
	}
	for _, name := range wireNames {
		if bytes.EqualFold(key, name) {
			return false
		}
	}
	return true
}

// wireNames are the JSON names of wireEvent's members.
var wireNames = func() [][]byte {
	names := [][]byte{[]byte(mergedObjectIDsName)}
	for name := range wireFields {
		names = append(names, []byte(name))
	}
	return names
}()
