package hubspot_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
)

func TestSimProperties(t *testing.T) {
	t.Parallel()
	c, sim := simClient(t, hubspotsim.Config{})
	ctx := context.Background()

	byName := func(t *testing.T, typ hubspot.ObjectType) map[string]hubspot.Property {
		t.Helper()
		props, err := c.GetProperties(ctx, typ)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]hubspot.Property{}
		for _, p := range props {
			m[p.Name] = p
		}
		return m
	}
	contacts := byName(t, hubspot.Contacts)
	if p := contacts["email"]; !p.HasUniqueValue || p.Type != hubspot.PropertyString || !p.Writable() {
		t.Errorf("contacts email = %+v; want a writable, unique string", p)
	}
	if p := contacts["hs_object_id"]; p.Writable() || !p.ModificationMetadata.ReadOnlyValue {
		t.Errorf("hs_object_id = %+v; want read-only", p)
	}
	if p := contacts["createdate"]; p.Writable() || p.Type != hubspot.PropertyDateTime {
		t.Errorf("createdate = %+v; want a read-only datetime", p)
	}
	if p := contacts["num_associated_deals"]; !p.Calculated || p.Writable() {
		t.Errorf("num_associated_deals = %+v; want calculated", p)
	}
	if p := contacts["firstname"]; p.HasUniqueValue || !p.Writable() {
		t.Errorf("firstname = %+v", p)
	}
	for _, typ := range []hubspot.ObjectType{hubspot.Companies, hubspot.Deals} {
		if p := byName(t, typ)["hubsync_record_id"]; !p.HasUniqueValue || !p.Writable() {
			t.Errorf("%s hubsync_record_id = %+v; want writable and unique", typ, p)
		}
	}
	if p := byName(t, hubspot.Deals)["amount"]; p.Type != hubspot.PropertyNumber {
		t.Errorf("deals amount = %+v; want a number", p)
	}

	created, err := c.CreateProperty(ctx, hubspot.Contacts, hubspot.PropertyCreate{
		Name: "loyalty_id", Label: "Loyalty id", Type: hubspot.PropertyString, FieldType: "text", GroupName: "contactinformation", HasUniqueValue: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if created.Name != "loyalty_id" || !created.HasUniqueValue || !created.Writable() {
		t.Fatalf("created = %+v", created)
	}
	if p := byName(t, hubspot.Contacts)["loyalty_id"]; !p.HasUniqueValue {
		t.Errorf("listed after creation = %+v", p)
	}
	if len(sim.Properties("contacts")) != len(contacts)+1 {
		t.Errorf("Server.Properties lists %d, want %d", len(sim.Properties("contacts")), len(contacts)+1)
	}
	// A second creation of the name is a conflict; a bad type is a validation error.
	_, err = c.CreateProperty(ctx, hubspot.Contacts, hubspot.PropertyCreate{Name: "loyalty_id", Label: "x", Type: "string", FieldType: "text", GroupName: "g"})
	if hubspot.KindOf(err) != hubspot.KindConflict {
		t.Errorf("duplicate property: %v, want a conflict", err)
	}
	_, err = c.CreateProperty(ctx, hubspot.Contacts, hubspot.PropertyCreate{Name: "x_score", Label: "x", Type: "integer", FieldType: "number", GroupName: "g"})
	if hubspot.KindOf(err) != hubspot.KindValidation {
		t.Errorf("unknown type: %v, want a validation error", err)
	}
	// A property created on deals is not a contact property.
	if err := sim.CreateProperty("deals", hubspotsim.Property{Name: "priority_score", Type: "number"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := byName(t, hubspot.Contacts)["priority_score"]; ok {
		t.Error("a deals property is listed on contacts")
	}
	if err := sim.CreateProperty("deals", hubspotsim.Property{Name: "priority_score", Type: "number"}); !errors.Is(err, hubspotsim.ErrInvalid) {
		t.Errorf("duplicate CreateProperty: %v, want ErrInvalid", err)
	}
}
