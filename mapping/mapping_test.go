package mapping_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hubsync/hubsync/mapping"
)

func TestDefaultContacts(t *testing.T) {
	c, ok := mapping.Default().Lookup("contacts")
	if !ok || c.IDProperty != "email" {
		t.Fatalf("contacts mapping = %+v, %v", c, ok)
	}
	props, err := c.ToHubSpot(map[string]any{"email": "a@b.c", "first_name": "Ada", "secret": "x", "phone": nil})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"email": "a@b.c", "firstname": "Ada", "phone": ""}
	if !reflect.DeepEqual(props, want) {
		t.Fatalf("ToHubSpot = %v, want %v (unmapped fields must not be sent)", props, want)
	}
}

func TestDiffSendsOnlyChanges(t *testing.T) {
	d, _ := mapping.Default().Lookup("deals")
	old := map[string]any{"name": "Big", "amount": 100.0, "stage": "open"}
	new := map[string]any{"name": "Big", "amount": 250.5, "pipeline": "default"}
	got, err := d.Diff(old, new)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"amount": "250.5", "dealstage": "", "pipeline": "default"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Diff = %v, want %v", got, want)
	}
	all, _ := d.Diff(nil, new)
	if len(all) != 3 {
		t.Fatalf("Diff(nil, new) = %v, want every present field", all)
	}
}

func TestFromHubSpot(t *testing.T) {
	co, _ := mapping.Default().Lookup("companies")
	got, err := co.FromHubSpot(map[string]string{"name": "Acme", "numberofemployees": "42", "city": "", "hs_unmapped": "x"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"name": "Acme", "employees": 42.0, "city": nil}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("FromHubSpot = %v, want %v", got, want)
	}
	if _, err := co.FromHubSpot(map[string]string{"numberofemployees": "many"}); err == nil {
		t.Fatal("a non-numeric value for a number field must be an error")
	}
}

func TestForWebhook(t *testing.T) {
	s := mapping.Default()
	for sub, want := range map[string]string{"contact.propertyChange": "contacts", "deal.creation": "deals", "company.merge": "companies"} {
		o, ok := s.ForWebhook(sub)
		if !ok || o.ObjectType != want {
			t.Errorf("ForWebhook(%q) = %q, %v; want %q", sub, o.ObjectType, ok, want)
		}
	}
	if _, ok := s.ForWebhook("ticket.creation"); ok {
		t.Error("an unmapped object type must not match")
	}
}

func TestNewSetRejectsBadMappings(t *testing.T) {
	bad := []mapping.Object{
		{ObjectType: "x"},
		{ObjectType: "x", HubSpotType: "x", Fields: []mapping.Field{{Local: "a", HubSpot: "b"}, {Local: "a", HubSpot: "c"}}},
		{ObjectType: "x", HubSpotType: "x", Fields: []mapping.Field{{Local: "a", HubSpot: "b", Type: "date"}}},
		{ObjectType: "x", HubSpotType: "x", IDProperty: "email"},
	}
	for i, o := range bad {
		if _, err := mapping.NewSet(o); err == nil {
			t.Errorf("case %d: NewSet accepted %+v", i, o)
		}
	}
}

func TestRecordIDAsIDProperty(t *testing.T) {
	for _, ot := range []string{"companies", "deals"} {
		o, ok := mapping.Default().Lookup(ot)
		if !ok || o.IDProperty != mapping.RecordIDProperty || !o.IDFromRecordID() {
			t.Fatalf("%s mapping = %+v; want upsert by %s holding the record id", ot, o, mapping.RecordIDProperty)
		}
		if got := o.IDValue("rec-1", map[string]any{"name": "x"}); got != "rec-1" {
			t.Fatalf("%s IDValue = %q, want the record id", ot, got)
		}
	}
	c, _ := mapping.Default().Lookup("contacts")
	if got := c.IDValue("rec-1", map[string]any{"email": " a@b.c "}); got != "a@b.c" {
		t.Fatalf("contacts IDValue = %q", got)
	}
	if got := c.IDValue("rec-1", map[string]any{"email": 5.0}); got != "" {
		t.Fatalf("non-string IDField gave %q", got)
	}
	bad := []mapping.Object{
		{ObjectType: "x", HubSpotType: "x", IDProperty: "p", IDField: "$record"},
		{ObjectType: "x", HubSpotType: "x", IDProperty: "name", IDField: mapping.RecordIDField,
			Fields: []mapping.Field{{Local: "name", HubSpot: "name"}}},
		{ObjectType: "x", HubSpotType: "x", IDField: mapping.RecordIDField},
	}
	for i, o := range bad {
		if _, err := mapping.NewSet(o); err == nil {
			t.Errorf("bad mapping %d accepted", i)
		}
	}
	if _, err := mapping.NewSet(mapping.Object{ObjectType: "x", HubSpotType: "2-1", IDProperty: "ext_id", IDField: mapping.RecordIDField}); err != nil {
		t.Fatal(err)
	}
}

func TestNumbersAreSentInPlainDecimal(t *testing.T) {
	d, _ := mapping.Default().Lookup("deals")
	for in, want := range map[string]string{
		"12345678901234567890": "12345678901234567890", // beyond int64 and float64: every digit
		"250":                  "250",
		"-7":                   "-7",
		"2.5e-7":               "0.00000025",
		"1e+21":                "1000000000000000000000",
		"2.50":                 "2.5",
	} {
		got, err := d.ToHubSpot(map[string]any{"amount": json.Number(in)})
		if err != nil || got["amount"] != want {
			t.Errorf("amount %s sent as %q (%v), want %q", in, got["amount"], err, want)
		}
	}
}
