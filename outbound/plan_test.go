package outbound

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

type f = map[string]any

// ev builds an outbound event; a nil map encodes as no payload.
func ev(id, objectType, recordID, eventType string, old, new f, syncSourced bool) store.OutboundEvent {
	enc := func(fields f) json.RawMessage {
		if fields == nil {
			return nil
		}
		s := outbox.Snapshot{ID: recordID, Fields: fields}
		if syncSourced {
			s.Metadata = map[string]string{outbox.MetadataSyncSource: "hubspot"}
		}
		b, err := s.Marshal()
		if err != nil {
			panic(err)
		}
		return b
	}
	return store.OutboundEvent{ID: id, Destination: "hubspot", ObjectType: objectType, RecordID: recordID, EventType: eventType,
		Payload: enc(new), OldPayload: enc(old), QueueState: store.QueueState{Attempt: 1}}
}

func TestBuildPlanCoalescing(t *testing.T) {
	a0 := f{"email": "a@x.com", "first_name": "Ann"}
	a1 := f{"email": "a@x.com", "first_name": "Anna"}
	a2 := f{"email": "a@x.com", "first_name": "Anna", "phone": "1"}
	a3 := f{"email": "a@x.com", "first_name": "Ann", "phone": "1"}
	type want struct {
		op    Op
		props map[string]string
		id    string
	}
	tests := []struct {
		name   string
		events []store.OutboundEvent
		linked string
		want   want
	}{
		{"create+updates → one upsert of the final snapshot", []store.OutboundEvent{
			ev("1", "contacts", "r", store.EventCreate, nil, a0, false),
			ev("2", "contacts", "r", store.EventUpdate, a0, a1, false),
			ev("3", "contacts", "r", store.EventUpdate, a1, a2, false),
		}, "", want{OpUpsert, map[string]string{"email": "a@x.com", "firstname": "Anna", "phone": "1"}, ""}},
		{"updates of a linked record → update of first-old vs last-new", []store.OutboundEvent{
			ev("1", "contacts", "r", store.EventUpdate, a0, a1, false),
			ev("2", "contacts", "r", store.EventUpdate, a1, a2, false),
		}, "77", want{OpUpdate, map[string]string{"firstname": "Anna", "phone": "1"}, "77"}},
		{"a change and its undo send only what differs", []store.OutboundEvent{
			ev("1", "contacts", "r", store.EventUpdate, a0, a1, false),
			ev("2", "contacts", "r", store.EventUpdate, a1, a2, false),
			ev("3", "contacts", "r", store.EventUpdate, a2, a3, false),
		}, "77", want{OpUpdate, map[string]string{"phone": "1"}, "77"}},
		{"nothing mapped changed → no call", []store.OutboundEvent{
			ev("1", "contacts", "r", store.EventUpdate, a0, f{"email": "a@x.com", "first_name": "Ann", "unmapped": 3}, false),
		}, "77", want{OpNone, nil, ""}},
		{"removed field is cleared", []store.OutboundEvent{
			ev("1", "contacts", "r", store.EventUpdate, a2, a1, false),
		}, "77", want{OpUpdate, map[string]string{"phone": ""}, "77"}},
		{"anything + delete → archive", []store.OutboundEvent{
			ev("1", "contacts", "r", store.EventUpdate, a0, a1, false),
			ev("2", "contacts", "r", store.EventDelete, a1, nil, false),
		}, "77", want{OpArchive, nil, "77"}},
		{"create + delete never sent → no call", []store.OutboundEvent{
			ev("1", "contacts", "r", store.EventCreate, nil, a0, false),
			ev("2", "contacts", "r", store.EventDelete, a0, nil, false),
		}, "", want{OpNone, nil, ""}},
		{"delete of an unlinked company → resolve by record id and archive", []store.OutboundEvent{
			ev("1", "companies", "c", store.EventDelete, f{"name": "Acme"}, nil, false),
		}, "", want{OpResolveArchive, nil, ""}},
		{"delete of an unlinked contact with email → resolve and archive", []store.OutboundEvent{
			ev("1", "contacts", "r", store.EventDelete, a0, nil, false),
		}, "", want{OpResolveArchive, nil, ""}},
		{"delete then create of a linked record → exact update", []store.OutboundEvent{
			ev("1", "contacts", "r", store.EventDelete, a2, nil, false),
			ev("2", "contacts", "r", store.EventCreate, nil, f{"email": "a@x.com", "last_name": "Lee"}, false),
		}, "77", want{OpUpdate, map[string]string{"firstname": "", "phone": "", "lastname": "Lee"}, "77"}},
		{"delete then create of an unlinked record → upsert", []store.OutboundEvent{
			ev("1", "contacts", "r", store.EventDelete, a2, nil, false),
			ev("2", "contacts", "r", store.EventCreate, nil, a0, false),
		}, "", want{OpUpsert, map[string]string{"email": "a@x.com", "firstname": "Ann"}, ""}},
		{"company → upsert by record id, which it also stores", []store.OutboundEvent{
			ev("1", "companies", "c", store.EventCreate, nil, f{"name": "Acme", "employees": 12.0}, false),
		}, "", want{OpUpsert, map[string]string{"name": "Acme", "numberofemployees": "12", mapping.RecordIDProperty: "c"}, ""}},
		{"contact without email → create", []store.OutboundEvent{
			ev("1", "contacts", "r", store.EventCreate, nil, f{"first_name": "Nomail"}, false),
		}, "", want{OpCreate, map[string]string{"firstname": "Nomail"}, ""}},
		{"sync-sourced only → no call", []store.OutboundEvent{
			ev("1", "contacts", "r", store.EventUpdate, a0, a1, true),
		}, "77", want{OpNone, nil, ""}},
		{"sync-sourced delete → no call", []store.OutboundEvent{
			ev("1", "contacts", "r", store.EventDelete, a0, a0, true), // the marker rides in the payload
		}, "77", want{OpNone, nil, ""}},
		{"local change overwritten by HubSpot's → not echoed", []store.OutboundEvent{
			ev("1", "contacts", "r", store.EventUpdate, a0, a1, false),
			ev("2", "contacts", "r", store.EventUpdate, a1, f{"email": "a@x.com", "first_name": "Hub"}, true),
		}, "77", want{OpNone, nil, ""}},
		{"local change before HubSpot's change to another property is kept", []store.OutboundEvent{
			ev("1", "contacts", "r", store.EventUpdate, a0, a1, false),
			ev("2", "contacts", "r", store.EventUpdate, a1, f{"email": "a@x.com", "first_name": "Anna", "phone": "9"}, true),
		}, "77", want{OpUpdate, map[string]string{"firstname": "Anna"}, "77"}},
		{"local change after HubSpot's is sent", []store.OutboundEvent{
			ev("1", "contacts", "r", store.EventUpdate, a0, a1, true),
			ev("2", "contacts", "r", store.EventUpdate, a1, a0, false),
		}, "77", want{OpUpdate, map[string]string{"firstname": "Ann"}, "77"}},
		{"sync-sourced create then local update, unlinked → upsert", []store.OutboundEvent{
			ev("1", "contacts", "r", store.EventCreate, nil, a0, true),
			ev("2", "contacts", "r", store.EventUpdate, a0, a1, false),
		}, "", want{OpUpsert, map[string]string{"email": "a@x.com", "firstname": "Anna"}, ""}},
		{"unmapped object type → fail", []store.OutboundEvent{
			ev("1", "widgets", "w", store.EventCreate, nil, f{"x": "y"}, false),
		}, "", want{OpFail, nil, ""}},
		{"bad payload → fail", []store.OutboundEvent{
			{ID: "1", Destination: "hubspot", ObjectType: "contacts", RecordID: "r", EventType: store.EventCreate, Payload: json.RawMessage(`{"fields":[`)},
		}, "", want{OpFail, nil, ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			links := map[RecordKey]string{}
			if tt.linked != "" {
				links[RecordKey{tt.events[0].ObjectType, tt.events[0].RecordID}] = tt.linked
			}
			p, err := BuildPlan(tt.events, links, mapping.Default())
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Records) != 1 {
				t.Fatalf("records = %d, want 1", len(p.Records))
			}
			r := p.Records[0]
			if r.Op != tt.want.op {
				t.Fatalf("op = %v (%s), want %v", r.Op, r.Reason, tt.want.op)
			}
			if tt.want.props != nil && !maps.Equal(r.Properties, tt.want.props) {
				t.Errorf("properties = %v, want %v", r.Properties, tt.want.props)
			}
			if r.HubSpotID != tt.want.id {
				t.Errorf("HubSpotID = %q, want %q", r.HubSpotID, tt.want.id)
			}
			if len(r.Events) != len(tt.events) {
				t.Errorf("events = %d, want all %d", len(r.Events), len(tt.events))
			}
			wantCalls := 1
			switch r.Op {
			case OpNone, OpFail:
				wantCalls = 0
			case OpResolveArchive:
				wantCalls = 2
			}
			if got := p.EstimateCalls(); got != wantCalls {
				t.Errorf("EstimateCalls = %d, want %d", got, wantCalls)
			}
		})
	}
}

func TestBuildPlanRetriedCreateDeleteResolves(t *testing.T) {
	// A create claimed before may have reached HubSpot before a crash.
	c := ev("1", "contacts", "r", store.EventCreate, nil, f{"email": "a@x.com"}, false)
	c.Attempt = 2
	d := ev("2", "contacts", "r", store.EventDelete, f{"email": "a@x.com"}, nil, false)
	p, err := BuildPlan([]store.OutboundEvent{c, d}, nil, mapping.Default())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Records) != 1 {
		t.Fatalf("records = %d, want 1", len(p.Records))
	}
	if op := p.Records[0].Op; op != OpResolveArchive {
		t.Fatalf("op = %v, want resolve_archive", op)
	}
}

// TestBuildPlanRetriedCreateEmailChanged: a create claimed before may have
// created its object under the email it had then; the email changed since,
// so the plan resolves by the earlier emails (the newest PriorIDValuesMax of
// them), and a call carries at most as many records as keep its read within
// HubSpot's batch limit.
func TestBuildPlanRetriedCreateEmailChanged(t *testing.T) {
	var evs []store.OutboundEvent
	for i := range 30 {
		rec := fmt.Sprint("r", i)
		var prev f
		for j := range 6 { // five emails tried, then a sixth not yet
			e := ev(fmt.Sprint(rec, "-", j), "contacts", rec, store.EventUpdate, prev, f{"email": fmt.Sprintf("%s-%d@x.com", rec, j)}, false)
			if j == 0 {
				e.EventType, e.OldPayload = store.EventCreate, nil
			}
			if j < 5 {
				e.Attempt = 2
			}
			evs = append(evs, e)
			prev = f{"email": fmt.Sprintf("%s-%d@x.com", rec, j)}
		}
	}
	p, err := BuildPlan(evs, nil, mapping.Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Records {
		want := []string{r.Key.RecordID + "-4@x.com", r.Key.RecordID + "-3@x.com", r.Key.RecordID + "-2@x.com", r.Key.RecordID + "-1@x.com"}
		if r.Op != OpResolveUpsert || r.IDValue != r.Key.RecordID+"-5@x.com" || !slices.Equal(r.PriorIDValues, want) {
			t.Fatalf("%s: op %v, id value %q, prior %v; want resolve_upsert by its latest email, reading %v", r.Key, r.Op, r.IDValue, r.PriorIDValues, want)
		}
	}
	if len(p.Calls) != 2 || len(p.Calls[0].Records) != 25 || len(p.Calls[1].Records) != 5 {
		t.Fatalf("%d calls; want 2, of 25 and 5 records (100 ids to read at most)", len(p.Calls))
	}
	if got := p.EstimateCalls(); got != 6 {
		t.Errorf("EstimateCalls = %d, want 6 (a read, an update and an upsert per call)", got)
	}
}

func TestBuildPlanBatching(t *testing.T) {
	var evs []store.OutboundEvent
	links := map[RecordKey]string{}
	// 250 new contacts, two pairs sharing an email; 120 linked updates; 3 deletes.
	for i := range 250 {
		email := fmt.Sprintf("c%d@x.com", i)
		if i == 7 || i == 8 {
			email = "Same@x.com"
		}
		if i == 9 {
			email = "same@X.com"
		}
		evs = append(evs, ev(fmt.Sprint("n", i), "contacts", fmt.Sprint("n", i), store.EventCreate, nil, f{"email": email}, false))
	}
	for i := range 120 {
		id := fmt.Sprint("u", i)
		links[RecordKey{"contacts", id}] = fmt.Sprint(1000 + i)
		evs = append(evs, ev(id, "contacts", id, store.EventUpdate, f{"first_name": "a"}, f{"first_name": "b"}, false))
	}
	for i := range 3 {
		id := fmt.Sprint("d", i)
		links[RecordKey{"deals", id}] = fmt.Sprint(2000 + i)
		evs = append(evs, ev(id, "deals", id, store.EventDelete, f{"name": "x"}, nil, false))
	}
	p, err := BuildPlan(evs, links, mapping.Default())
	if err != nil {
		t.Fatal(err)
	}
	count := map[Op]int{}
	inputs := map[Op]int{}
	for _, c := range p.Calls {
		if len(c.Records) > 100 {
			t.Fatalf("call of %d records", len(c.Records))
		}
		count[c.Op]++
		inputs[c.Op] += len(c.Records)
		if c.Op == OpUpsert {
			if c.IDProperty != "email" {
				t.Fatalf("upsert by %q", c.IDProperty)
			}
			seen := map[string]bool{}
			for _, r := range c.Records {
				if seen[r.dupKey()] {
					t.Fatalf("email %s twice in one upsert call", r.IDValue)
				}
				seen[r.dupKey()] = true
			}
		}
	}
	// Three records share one email: they need three calls, the first of which
	// fills up, so the upserts take ceil(250/100) = 3 calls.
	if count[OpUpsert] != 3 || inputs[OpUpsert] != 250 {
		t.Errorf("upsert calls = %d with %d inputs, want 3 with 250", count[OpUpsert], inputs[OpUpsert])
	}
	if count[OpUpdate] != 2 || inputs[OpUpdate] != 120 {
		t.Errorf("update calls = %d with %d inputs, want 2 with 120", count[OpUpdate], inputs[OpUpdate])
	}
	if count[OpArchive] != 1 || inputs[OpArchive] != 3 {
		t.Errorf("archive calls = %d with %d inputs, want 1 with 3", count[OpArchive], inputs[OpArchive])
	}
	if got := p.EstimateCalls(); got != 6 {
		t.Errorf("EstimateCalls = %d, want 6", got)
	}
}

func TestBuildPlanKeepsRecordsApart(t *testing.T) {
	// Interleaved events of two records: each record gets its own events, in order.
	a0, a1 := f{"email": "a@x.com"}, f{"email": "a@x.com", "phone": "1"}
	b0, b1 := f{"email": "b@x.com"}, f{"email": "b@x.com", "phone": "2"}
	evs := []store.OutboundEvent{
		ev("1", "contacts", "a", store.EventCreate, nil, a0, false),
		ev("2", "contacts", "b", store.EventCreate, nil, b0, false),
		ev("3", "contacts", "a", store.EventUpdate, a0, a1, false),
		ev("4", "contacts", "b", store.EventUpdate, b0, b1, false),
	}
	p, err := BuildPlan(evs, nil, mapping.Default())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Records) != 2 || p.Coalesced() != 2 || p.EstimateCalls() != 1 {
		t.Fatalf("records=%d coalesced=%d calls=%d, want 2, 2, 1", len(p.Records), p.Coalesced(), p.EstimateCalls())
	}
	if evs := p.Records[1].Events; len(evs) != 2 {
		t.Fatalf("record 1 carries %d events, want 2: %+v", len(evs), evs)
	}
	if got := p.Records[1].Properties["phone"]; got != "2" || p.Records[1].Events[1].ID != "4" {
		t.Fatalf("record b: phone %q, events %v", got, p.Records[1].Events)
	}
}

// TestValueBefore: the value an object held before the writes of a group of
// records is the newest version older than HubSpot's earliest answer to them;
// the oldest version when none is, or when an answer had no time.
func TestValueBefore(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1_700_000_000+int64(s), 0) }
	v := func(val string, s int) hubspot.PropertyVersion {
		return hubspot.PropertyVersion{Value: val, Timestamp: at(s)}
	}
	group := func(answers ...int) []*RecordPlan {
		var out []*RecordPlan
		for _, s := range answers {
			r := &RecordPlan{}
			if s >= 0 {
				r.answeredAt = at(s)
			}
			out = append(out, r)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		versions []hubspot.PropertyVersion // newest first
		group    []*RecordPlan
		want     string
		ok       bool
	}{
		{"the retry's write after the create", []hubspot.PropertyVersion{v("b", 20), v("a", 0)}, group(20, 10), "a", true},
		{"the merge's value after both creates' histories", []hubspot.PropertyVersion{v("b", 20), v("b", 10), v("a", 1), v("b", 0)}, group(20, 20), "b", true},
		{"writes back and forth in the retry", []hubspot.PropertyVersion{v("a", 21), v("b", 20), v("a", 5)}, group(20, 21), "a", true},
		{"no version before the answers", []hubspot.PropertyVersion{v("b", 20), v("a", 20)}, group(20, 20), "a", true},
		{"an answer without a time", []hubspot.PropertyVersion{v("b", 20), v("c", 10), v("a", 0)}, group(20, -1), "a", true},
		{"no history", nil, group(20, 20), "", false},
	} {
		got, ok := valueBefore(tc.versions, tc.group)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: valueBefore = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
