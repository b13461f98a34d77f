package inbound

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hubsync/hubsync/internal/testcheck"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/store"
)

const sampleDelivery = `[
 {"eventId":1,"subscriptionId":11,"portalId":62515,"appId":1000,"occurredAt":1700000000000,
  "subscriptionType":"contact.creation","attemptNumber":0,"objectId":123,"changeFlag":"NEW","changeSource":"CRM_UI"},
 {"eventId":2,"subscriptionId":12,"portalId":62515,"appId":1000,"occurredAt":1700000000001,
  "subscriptionType":"contact.propertyChange","attemptNumber":0,"objectId":123,"propertyName":"firstname",
  "propertyValue":"Ada","changeSource":"CRM_UI","sourceId":"userId:7"},
 {"eventId":3,"subscriptionId":13,"portalId":62515,"appId":1000,"occurredAt":1700000000002,
  "subscriptionType":"contact.merge","attemptNumber":1,"objectId":123,"primaryObjectId":123,
  "mergedObjectIds":[456],"newObjectId":123,"numberOfPropertiesMoved":2},
 {"eventId":4,"subscriptionId":14,"portalId":62515,"appId":1000,"occurredAt":1700000000003,
  "subscriptionType":"contact.associationChange","objectId":123,"associationType":"CONTACT_TO_COMPANY",
  "fromObjectId":123,"toObjectId":9,"associationRemoved":false,"isPrimaryAssociation":true},
 {"eventId":5,"portalId":62515,"occurredAt":1700000000004,"subscriptionType":"ticket.deletion","objectId":"77"},
 {"eventId":6,"portalId":62515,"occurredAt":1700000000005,"subscriptionType":"contact.privacyDeletion","objectId":123},
 {"eventId":7,"portalId":62515,"occurredAt":1700000000006,"subscriptionType":"deal.restore","objectId":5},
 {"eventId":8,"portalId":62515,"occurredAt":1700000000007,"subscriptionType":"company.somethingNew","objectId":5}
]`

func TestParseEvents(t *testing.T) {
	t.Parallel()
	got, err := ParseEvents([]byte(sampleDelivery))
	if err != nil {
		t.Fatal(err)
	}
	wantTypes := []string{store.EventCreate, store.EventUpdate, store.EventMerge, store.EventAssociation,
		store.EventDelete, store.EventPrivacyDelete, store.EventRestore, EventOther}
	if len(got) != len(wantTypes) {
		t.Fatalf("got %d events, want %d", len(got), len(wantTypes))
	}
	keys := map[string]bool{}
	for i, p := range got {
		if p.Event.EventType != wantTypes[i] {
			t.Errorf("event %d: EventType %q, want %q", i, p.Event.EventType, wantTypes[i])
		}
		if keys[p.IdempotencyKey] {
			t.Errorf("event %d: idempotency key repeats", i)
		}
		keys[p.IdempotencyKey] = true
		if !json.Valid(p.Raw) || !strings.Contains(string(p.Raw), `"eventId"`) {
			t.Errorf("event %d: raw %s is not the event as received", i, p.Raw)
		}
	}
	up := got[1].Event
	if up.ObjectID != "123" || up.PropertyName != "firstname" || deref(up.PropertyValue) != "Ada" || up.OccurredAt != 1700000000001 || up.PortalID != "62515" {
		t.Errorf("propertyChange parsed as %+v", up)
	}
	m := got[2].Event
	if m.PrimaryObjectID != "123" || len(m.MergedObjectIDs) != 1 || m.MergedObjectIDs[0] != "456" || m.NumberOfPropertiesMoved != 2 {
		t.Errorf("merge parsed as %+v", m)
	}
	if got[4].Event.ObjectID != "77" {
		t.Errorf("string objectId parsed as %q", got[4].Event.ObjectID)
	}

	// Resolve maps the object type; unmapped types keep HubSpot's name.
	row, err := got[1].Resolve(mapping.Default(), "")
	if err != nil {
		t.Fatal(err)
	}
	if row.Source != "hubspot" || row.ObjectType != "contacts" || row.ExternalID != "123" || row.EventType != store.EventUpdate {
		t.Errorf("row = %+v", row)
	}
	var canon Event
	if err := json.Unmarshal(row.Payload, &canon); err != nil || canon.Version != EventVersion || canon.ObjectType != "contacts" {
		t.Errorf("payload %s: %v", row.Payload, err)
	}
	if strings.Contains(string(row.Payload), "attemptNumber") {
		t.Errorf("payload carries attemptNumber: %s", row.Payload)
	}
	ticket, _ := got[4].Resolve(nil, "")
	if ticket.ObjectType != "ticket" {
		t.Errorf("unmapped type stored as %q, want ticket", ticket.ObjectType)
	}
}

func TestParseEventsRejects(t *testing.T) {
	t.Parallel()
	ev := func(fields string) string {
		return `[{"eventId":1,"portalId":1,` + fields + `}]`
	}
	many := "[" + strings.Repeat(`{"objectId":1,"occurredAt":1,"subscriptionType":"contact.creation"},`, 100) +
		`{"objectId":1,"occurredAt":1,"subscriptionType":"contact.creation"}]`
	cases := map[string]string{
		"empty":                 ``,
		"object":                `{"objectId":1}`,
		"null":                  `null`,
		"truncated":             `[{"objectId":1`,
		"trailing":              `[] x`,
		"not objects":           `[1,2]`,
		"missing objectId":      ev(`"occurredAt":1,"subscriptionType":"contact.creation"`),
		"missing occurredAt":    ev(`"objectId":1,"subscriptionType":"contact.creation"`),
		"missing type":          ev(`"objectId":1,"occurredAt":1`),
		"type without dot":      ev(`"objectId":1,"occurredAt":1,"subscriptionType":"contact"`),
		"negative occurredAt":   ev(`"objectId":1,"occurredAt":-5,"subscriptionType":"contact.creation"`),
		"fraction objectId":     ev(`"objectId":1.5,"occurredAt":1,"subscriptionType":"contact.creation"`),
		"object objectId":       ev(`"objectId":{},"occurredAt":1,"subscriptionType":"contact.creation"`),
		"long objectId":         ev(`"objectId":"` + strings.Repeat("9", MaxIDLength+1) + `","occurredAt":1,"subscriptionType":"contact.creation"`),
		"update without name":   ev(`"objectId":1,"occurredAt":1,"subscriptionType":"contact.propertyChange"`),
		"bad mergedObjectIds":   ev(`"objectId":1,"occurredAt":1,"subscriptionType":"contact.merge","mergedObjectIds":[{}]`),
		"bad associationRemove": ev(`"objectId":1,"occurredAt":1,"subscriptionType":"contact.associationChange","associationRemoved":"yes"`),
		"invalid utf8":          "[{\"objectId\":1,\"occurredAt\":1,\"subscriptionType\":\"contact.\xff\"}]",
	}
	for name, body := range cases {
		_, err := ParseEvents([]byte(body))
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	if _, err := ParseEvents([]byte(many)); !errors.Is(err, ErrTooManyEvents) {
		t.Errorf("101 events: err = %v, want ErrTooManyEvents", err)
	}
	if got, err := ParseEvents([]byte(` [] `)); err != nil || len(got) != 0 {
		t.Errorf("empty array: %v, %v", got, err)
	}
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	base := `{"eventId":9,"portalId":1,"occurredAt":1700000000000,"subscriptionType":"contact.propertyChange","objectId":5,"propertyName":"phone","propertyValue":"1","attemptNumber":%d}`
	key := func(body string) string {
		t.Helper()
		p, err := ParseEvents([]byte("[" + body + "]"))
		if err != nil {
			t.Fatal(err)
		}
		return testcheck.Index(t, "the parsed events", p, 0).IdempotencyKey
	}
	k0 := key(fmt.Sprintf(base, 0))
	if k3 := key(fmt.Sprintf(base, 3)); k3 != k0 {
		t.Error("a retry (attemptNumber 3) changed the idempotency key")
	}
	// Same fields in another order and spacing: same key.
	if k := key(`{ "objectId":5, "attemptNumber":1, "propertyValue":"1","propertyName":"phone","subscriptionType":"contact.propertyChange","occurredAt":1700000000000,"portalId":1,"eventId":9}`); k != k0 {
		t.Error("field order changed the idempotency key")
	}
	// eventId alone is not unique: the same eventId with another change is another key.
	other := strings.Replace(fmt.Sprintf(base, 0), `"propertyValue":"1"`, `"propertyValue":"2"`, 1)
	if key(other) == k0 {
		t.Error("a different propertyValue with the same eventId got the same key")
	}
	if key(strings.Replace(fmt.Sprintf(base, 0), `"objectId":5`, `"objectId":6`, 1)) == k0 {
		t.Error("a different objectId got the same key")
	}
	if key(strings.Replace(fmt.Sprintf(base, 0), `1700000000000`, `1700000000001`, 1)) == k0 {
		t.Error("a different occurredAt got the same key")
	}
	if len(k0) > 255 {
		t.Errorf("key %q does not fit the column", k0)
	}
}

func TestIsEcho(t *testing.T) {
	t.Parallel()
	cases := []struct {
		source, id, app string
		want            bool
	}{
		{"INTEGRATION", "1000", "1000", true},
		{"API", "1000", "1000", true},
		{"INTEGRATION", "app:1000", "1000", true},
		{"INTEGRATION", "2000", "1000", false},
		{"CRM_UI", "1000", "1000", false},
		{"INTEGRATION", "1000", "", false},
		{"", "", "", false},
	}
	for _, c := range cases {
		if got := (Event{ChangeSource: c.source, SourceID: c.id}).IsEcho(c.app); got != c.want {
			t.Errorf("IsEcho(%q,%q; app %q) = %v", c.source, c.id, c.app, got)
		}
	}
}

func TestParseEventsNUL(t *testing.T) {
	t.Parallel()
	// PostgreSQL's jsonb cannot hold U+0000: the canonical payload must not carry it.
	p, err := ParseEvents([]byte(`[{"objectId":1,"occurredAt":1,"subscriptionType":"contact.propertyChange","propertyName":"phone","propertyValue":"a\u0000b"}]`))
	if err != nil {
		t.Fatal(err)
	}
	row, err := testcheck.Index(t, "the parsed events", p, 0).Resolve(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(row.Payload), `\u0000`) {
		t.Errorf("payload keeps NUL: %s", row.Payload)
	}
}

func FuzzParseEvents(f *testing.F) {
	f.Add([]byte(sampleDelivery))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"objectId":"1","occurredAt":"2","subscriptionType":"a.b","mergedObjectIds":["1",2]}]`))
	f.Add([]byte(`[{"objectId":1,"occurredAt":1,"subscriptionType":"contact.propertyChange","propertyName":"x","propertyValue":true}]`))
	f.Add([]byte(`{"a":1}`))
	f.Add([]byte("[\"\\u0000\"]"))
	f.Fuzz(func(t *testing.T, body []byte) {
		evs, err := ParseEvents(body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooManyEvents) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		if len(evs) > MaxEventsPerDelivery {
			t.Fatalf("%d events accepted", len(evs))
		}
		for _, p := range evs {
			if p.Event.ObjectID == "" || p.Event.SubscriptionType == "" || p.Event.OccurredAt <= 0 {
				t.Fatalf("accepted event without required fields: %+v", p.Event)
			}
			row, err := p.Resolve(nil, "1")
			if err != nil {
				t.Fatal(err)
			}
			if len(row.ExternalID) > 255 || len(row.ObjectType) > 100 || len(row.EventType) > 20 || len(row.IdempotencyKey) > 255 {
				t.Fatalf("row does not fit the columns: %+v", row)
			}
			if strings.Contains(string(row.Payload), `\u0000`) || !json.Valid(row.Payload) || !json.Valid(row.RawPayload) {
				t.Fatalf("payload unfit for the store: %s", row.Payload)
			}
			var back Event
			if err := json.Unmarshal(row.Payload, &back); err != nil {
				t.Fatalf("payload does not decode: %v", err)
			}
		}
	})
}
