package demo

import (
	"reflect"
	"testing"

	"github.com/hubsync/hubsync/mapping"
)

func TestGenerateIsRepeatableAndSized(t *testing.T) {
	t.Parallel()
	for _, n := range []int{40, 300, 1500} {
		a, b := Generate(7, n), Generate(7, n)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("n=%d: same seed gave different workloads", n)
		}
		if len(a.Local) != n {
			t.Errorf("n=%d: %d local changes", n, len(a.Local))
		}
		c := a.Counts()
		if c[LocalCreate] == 0 || c[LocalUpdate] == 0 || c[LocalDelete] == 0 || c[HubSpotCreate] < 4 ||
			c[HubSpotUpdate] == 0 || c[HubSpotDelete] == 0 || c[HubSpotMerge] != 1 {
			t.Errorf("n=%d: counts %v lack a kind of step", n, c)
		}
	}
	if reflect.DeepEqual(Generate(1, 300), Generate(2, 300)) {
		t.Error("different seeds gave the same workload")
	}
}

// TestGeneratePartitions checks the property the demo's correctness rests on:
// no record is edited on both sides, and local steps only touch live records.
func TestGeneratePartitions(t *testing.T) {
	t.Parallel()
	w := Generate(3, 1500)
	created := map[int]bool{}
	deleted := map[int]bool{}
	hot := 0
	for _, op := range w.Local {
		spec := w.Records[op.Ref]
		if spec.Partition == PartitionHubSpotCreated {
			t.Fatalf("local step %v on a HubSpot-created record", op.Kind)
		}
		switch op.Kind {
		case LocalCreate:
			if created[op.Ref] {
				t.Fatalf("record %d created twice", op.Ref)
			}
			created[op.Ref] = true
		case LocalUpdate, LocalDelete:
			if !created[op.Ref] || deleted[op.Ref] {
				t.Fatalf("%v of record %d that is not live", op.Kind, op.Ref)
			}
			if spec.Partition != PartitionLocal {
				t.Fatalf("%v of record %d edited in HubSpot", op.Kind, op.Ref)
			}
			if op.Kind == LocalDelete {
				deleted[op.Ref] = true
			}
		}
	}
	for _, spec := range w.Records {
		if spec.Hot {
			hot++
		}
	}
	if hot == 0 {
		t.Error("no hot record")
	}
	for _, op := range w.HubSpot {
		if op.Kind == HubSpotCreate {
			continue
		}
		for _, ref := range []int{op.Ref, op.Merged} {
			if p := w.Records[ref].Partition; p == PartitionLocal {
				t.Fatalf("HubSpot step %v on local record %d", op.Kind, ref)
			}
		}
	}
}

func TestExpect(t *testing.T) {
	t.Parallel()
	w := Workload{
		Records: []RecordSpec{{ObjectType: "contacts"}, {ObjectType: "contacts", Partition: PartitionHubSpotCreated}, {ObjectType: "contacts", Partition: PartitionHubSpotCreated}},
		Local: []Op{
			{Kind: LocalCreate, Ref: 0, Fields: map[string]any{"email": "a@x.example", "phone": "1", "notes": "n"}},
			{Kind: LocalUpdate, Ref: 0, Fields: map[string]any{"phone": nil, "first_name": "Ada"}},
		},
		HubSpot: []Op{
			{Kind: HubSpotCreate, Ref: 1, Props: map[string]string{"email": "p@x.example"}},
			{Kind: HubSpotCreate, Ref: 2, Props: map[string]string{"email": "m@x.example", "phone": "9"}},
			{Kind: HubSpotMerge, Ref: 1, Merged: 2},
		},
	}
	exp, err := w.Expect(mapping.Default())
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]string{
		{"email": "a@x.example", "firstname": "Ada"},
		{"email": "p@x.example", "phone": "9"},
		{"email": "m@x.example", "phone": "9"},
	}
	if len(exp) != len(want) {
		t.Fatalf("%d expected records, want %d: %+v", len(exp), len(want), exp)
	}
	for i, e := range exp {
		if !reflect.DeepEqual(e.Props, want[i]) {
			t.Errorf("record %d: props %v, want %v", i, e.Props, want[i])
		}
	}
	if !exp[0].Live || !exp[1].Live || exp[2].Live {
		t.Errorf("live = %v %v %v, want true true false", exp[0].Live, exp[1].Live, exp[2].Live)
	}
}
