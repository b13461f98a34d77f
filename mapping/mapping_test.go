package mapping_test

import (
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
