package inbound

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// wireSeeds are events whose members a walk could misread: duplicates, keys
// that match a field only ignoring case or only after unescaping, nested and
// escaped values, every JSON type in every member.
var wireSeeds = []string{
	sampleEvent,
	`{}`,
	` { "objectId" : 1 , "objectId" : "2" } `,
	`{"OBJECTID":1,"objectId":2}`,
	`{"objectId":2,"ObjectId":3}`,
	`{"\u006fbjectId":7}`,
	`{"ſubscriptionType":"contact.creation"}`,
	`{"attemptNumber":0,"extra":{"a":[1,{"b":"}]\""}],"c":null}}`,
	`{"propertyValue":"a\"b\\c\u0000d","propertyName":"x\/y"}`,
	`{"mergedObjectIds":[1,"2", 3 ]}`,
	`{"mergedObjectIds":[]}`,
	`{"mergedObjectIds":null}`,
	`{"mergedObjectIds":[1],"mergedObjectIds":[2,3]}`,
	`{"mergedObjectIds":{"a":1}}`,
	`{"mergedObjectIds":"1"}`,
	`{"MergedObjectIDs":[1]}`,
	`{"associationRemoved":true,"isPrimaryAssociation":false,"occurredAt":-1.5e3}`,
	`{"objectId":null,"eventId":{"x":[]},"portalId":[1,2]}`,
}

// sampleEvent is one event as HubSpot sends it.
const sampleEvent = `{"eventId":1,"subscriptionId":4242,"portalId":62515,"appId":1000,"occurredAt":1700000000000,"subscriptionType":"contact.propertyChange","attemptNumber":0,"objectId":123,"propertyName":"firstname","propertyValue":"Ada","changeSource":"CRM_UI","sourceId":"userId:7"}`

// TestDecodeWireMatchesEncodingJSON checks the walk against json.Unmarshal on
// the seeds, and that it walks the common shapes itself rather than handing
// them to encoding/json.
func TestDecodeWireMatchesEncodingJSON(t *testing.T) {
	for _, s := range wireSeeds {
		checkWire(t, []byte(s))
	}
	for _, s := range []string{sampleEvent, `{}`, `{"mergedObjectIds":[1,"2"]}`, `{"objectId":1,"objectId":2}`} {
		if _, ok := walkWire([]byte(s)); !ok {
			t.Errorf("walkWire(%s) handed the event to encoding/json", s)
		}
	}
	for _, s := range []string{`{"OBJECTID":1}`, `{"\u006fbjectId":7}`, `{"mergedObjectIds":"1"}`} {
		if _, ok := walkWire([]byte(s)); ok {
			t.Errorf("walkWire(%s) walked an event only encoding/json can decode", s)
		}
	}
}

func FuzzDecodeWire(f *testing.F) {
	for _, s := range wireSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkWire)
}

// checkWire fails t when decodeWire and the walk disagree with json.Unmarshal
// on raw, a JSON value.
func checkWire(t *testing.T, raw []byte) {
	if !json.Valid(raw) {
		return
	}
	var want wireEvent
	wantErr := json.Unmarshal(raw, &want)
	got, err := decodeWire(raw)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("decodeWire(%s): error %v, json.Unmarshal's %v", raw, err, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeWire(%s) = %+v, json.Unmarshal gives %+v", raw, got, want)
	}
	if w, ok := walkWire(raw); ok && (wantErr != nil || !reflect.DeepEqual(w, want)) {
		t.Fatalf("walkWire(%s) = %+v, json.Unmarshal gives %+v, %v", raw, w, want, wantErr)
	}
}

func FuzzSplitArray(f *testing.F) {
	for _, s := range []string{`[]`, ` [ 1 , "a\"]" , {"b":[2]} , null ] `, `[[],[[]],{}]`, `{"a":1}`, `"x"`, `[1,2]x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return
		}
		var want []json.RawMessage
		wantErr := json.Unmarshal(doc, &want)
		got, ok := splitArray(doc)
		isArray := bytes.HasPrefix(bytes.TrimLeft(doc, " \t\r\n"), []byte("["))
		if ok != isArray || (ok && wantErr != nil) {
			t.Fatalf("splitArray(%s) ok = %v; an array: %v, json.Unmarshal: %v", doc, ok, isArray, wantErr)
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("splitArray(%s) = %q, json.Unmarshal gives %q", doc, got, want)
		}
	})
}

func FuzzTextField(f *testing.F) {
	for _, s := range []string{`"abc"`, `""`, `"a\"b"`, `"\u0000"`, `"é\u00e9"`, `1`, `null`, `"a\\"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		var want string
		wantErr := json.Unmarshal(raw, &want)
		got, ok := textField(raw)
		if !present(raw) {
			if !ok || got != "" {
				t.Fatalf("textField(%s) = %q, %v; want absent", raw, got, ok)
			}
			return
		}
		if ok != (wantErr == nil) {
			t.Fatalf("textField(%s) ok = %v, json.Unmarshal: %v", raw, ok, wantErr)
		}
		if ok && got != string(bytes.ReplaceAll([]byte(want), []byte{0}, []byte("\uFFFD"))) {
			t.Fatalf("textField(%s) = %q, want %q", raw, got, want)
		}
	})
}

// BenchmarkParseDelivery measures the parse of one 100-event delivery, as
// TestReceiverLoad sends them.
//
//	go test ./inbound -run '^$' -bench BenchmarkParseDelivery
func BenchmarkParseDelivery(b *testing.B) {
	body := deliveryBody(b, 100)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		evs, bad, err := ParseDelivery(body)
		if err != nil || len(bad) > 0 || len(evs) != 100 {
			b.Fatalf("ParseDelivery: %d events, %d bad, %v", len(evs), len(bad), err)
		}
	}
}

// TestParseDeliveryOwnsItsText checks that the events ParseDelivery returns
// do not share the caller's body, nor one another's text: the caller may
// reuse its buffer, and appending to one event's text must not write over
// the next event.
func TestParseDeliveryOwnsItsText(t *testing.T) {
	body := []byte(`[{"objectId":1,"occurredAt":1,"subscriptionType":"contact.creation","sourceId":"a"},` +
		`{"objectId":2,"occurredAt":2,"subscriptionType":"contact.creation","sourceId":"b"}]`)
	evs, bad, err := ParseDelivery(body)
	if err != nil || len(bad) > 0 || len(evs) != 2 {
		t.Fatalf("ParseDelivery = %d events, %d bad, %v", len(evs), len(bad), err)
	}
	want := []string{string(evs[0].Raw), string(evs[1].Raw)}
	for i := range body {
		body[i] = ' '
	}
	_ = append(evs[0].Raw, "XXXX"...)
	for i, ev := range evs {
		if string(ev.Raw) != want[i] {
			t.Errorf("event %d's Raw changed to %q, want %q", i, ev.Raw, want[i])
		}
	}
	raw := append(make([]byte, 0, 256), `{"sourceId":"a","objectId":1}`...) // room to append in place
	w, ok := walkWire(raw)
	if !ok {
		t.Fatal("walkWire handed a plain event to encoding/json")
	}
	_ = append(w.SourceID, "xxxxxxxxxxxxxxxx"...)
	if string(w.ObjectID) != "1" {
		t.Errorf("appending to sourceId wrote over objectId: %q", w.ObjectID)
	}
}
