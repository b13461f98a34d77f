package demo

import (
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/mapping"
)

func obj(id string, props map[string]string) hubspotsim.Object {
	return hubspotsim.Object{ID: id, Properties: props}
}

func TestCompareEqual(t *testing.T) {
	t.Parallel()
	st := State{
		Local: []LocalRecord{
			{ObjectType: "contacts", ID: "a", HubSpotID: "1", Fields: map[string]any{"email": "a@x.example", "first_name": "Ada", "notes": "unmapped"}},
			{ObjectType: "deals", ID: "d", HubSpotID: "7", Fields: map[string]any{"name": "Deal", "amount": 1200.5}},
		},
		HubSpot: map[string][]hubspotsim.Object{
			"contacts": {obj("1", map[string]string{"email": "a@x.example", "firstname": "Ada", "hs_object_id": "1"})},
			"deals":    {obj("7", map[string]string{"dealname": "Deal", "amount": "1200.5"})},
		},
	}
	c := Compare(mapping.Default(), st, nil, nil)
	if !c.Consistent() {
		t.Fatalf("differences: %v", c.Differences)
	}
	for _, s := range c.Types {
		if s.Local != 1 || s.HubSpot != 1 || s.Equal != 1 {
			t.Errorf("summary %+v, want 1/1/1", s)
		}
	}
}

func TestCompareFindsEveryKindOfDifference(t *testing.T) {
	t.Parallel()
	st := State{
		Local: []LocalRecord{
			{ObjectType: "contacts", ID: "a", HubSpotID: "1", Fields: map[string]any{"email": "a@x.example", "first_name": "Ada"}},
			{ObjectType: "contacts", ID: "b", Fields: map[string]any{"email": "b@x.example"}},                 // never reached HubSpot
			{ObjectType: "contacts", ID: "c", HubSpotID: "3", Fields: map[string]any{"email": "c@x.example"}}, // HubSpot object archived
			{ObjectType: "contacts", ID: "e", HubSpotID: "5", Fields: map[string]any{"email": "e@x.example"}}, // explained
		},
		HubSpot: map[string][]hubspotsim.Object{
			"contacts": {
				obj("1", map[string]string{"email": "a@x.example", "firstname": "Grace"}),
				obj("2", map[string]string{"email": "z@x.example"}), // no local record
				obj("5", map[string]string{"email": "e@x.example", "phone": "1"}),
			},
		},
		Explained: map[string]string{"contacts/e": "dead letter: VALIDATION_ERROR"},
	}
	c := Compare(mapping.Default(), st, nil, nil)
	if c.Consistent() {
		t.Fatal("Consistent() = true for differing sides")
	}
	want := map[Problem]int{ProblemField: 1, ProblemNotInHubSpot: 2, ProblemNotLocal: 1}
	got := map[Problem]int{}
	for _, d := range c.Differences {
		got[d.Problem]++
	}
	for p, n := range want {
		if got[p] != n {
			t.Errorf("%s: %d differences, want %d (all: %v)", p, got[p], n, c.Differences)
		}
	}
	if len(c.Explained) != 1 || c.Explained[0].LocalID != "e" || !strings.Contains(c.Explained[0].String(), "VALIDATION_ERROR") {
		t.Errorf("explained = %v, want the phone difference of e", c.Explained)
	}
}

func TestCompareExpectations(t *testing.T) {
	t.Parallel()
	spec := RecordSpec{ObjectType: "companies"}
	st := State{
		Local: []LocalRecord{
			{ObjectType: "companies", ID: "a", HubSpotID: "1", Fields: map[string]any{"name": "Old"}},
			{ObjectType: "companies", ID: "g", HubSpotID: "2", Fields: map[string]any{"name": "Gone"}},
		},
		HubSpot: map[string][]hubspotsim.Object{"companies": {
			obj("1", map[string]string{"name": "Old"}),
			obj("2", map[string]string{"name": "Gone"}),
		}},
	}
	exp := []Expected{
		{Ref: 0, Spec: spec, Live: true, Props: map[string]string{"name": "New"}}, // lost update on both sides
		{Ref: 1, Spec: spec, Live: false},                                         // delete lost
		{Ref: 2, Spec: spec, Live: true, Props: map[string]string{"name": "X"}},   // never created
	}
	tg := []Target{{LocalID: "a"}, {HubSpotID: "2"}, {}}
	c := Compare(mapping.Default(), st, exp, tg)
	got := map[Problem]int{}
	for _, d := range c.Differences {
		got[d.Problem]++
	}
	if got[ProblemExpectedField] != 1 || got[ProblemShouldBeGone] != 2 || got[ProblemShouldExist] != 1 || len(c.Differences) != 4 {
		t.Fatalf("differences = %v", c.Differences)
	}
}

func TestLatencyOf(t *testing.T) {
	ms := []float64{5, 1, 4, 2, 3, 100, 6, 7, 8, 9}
	l := latencyOf(ms)
	if l.N != 10 || l.P50 != 6*time.Millisecond || l.P99 != 100*time.Millisecond || l.Max != 100*time.Millisecond {
		t.Fatalf("latencyOf = %+v, want N 10, p50 6ms, p99 100ms, max 100ms", l)
	}
	if got := latencyOf(nil); got.N != 0 || got.String() != "none" {
		t.Fatalf("latencyOf(nil) = %+v %q", got, got)
	}
}
